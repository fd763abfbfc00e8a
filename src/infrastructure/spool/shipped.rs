//! Where the hook executable ships: beside the addon's own `.node` file (in
//! its platform package, or in the package root after `npm run build`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::install::HOOK_EXECUTABLE_NAME;

/// The hook executable shipped beside this addon's `.node` file (in its
/// platform package, or in the package root after `npm run build`), found
/// from the addon's own file path as the loader loaded it; else why not
/// (that path unknown, no such file there). Looked up once per process.
pub fn shipped_hook_executable() -> Result<&'static Path, &'static str> {
    static SHIPPED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    SHIPPED
        .get_or_init(|| {
            let addon = addon_file().ok_or("the addon's own file path is unknown")?;
            let executable = addon.with_file_name(HOOK_EXECUTABLE_NAME);
            if executable.is_file() {
                Ok(executable)
            } else {
                Err(format!("{}: not shipped", executable.display()))
            }
        })
        .as_deref()
        .map_err(String::as_str)
}

/// The file this code was loaded from (the `.node` file), by the address of
/// one of its functions.
#[cfg(unix)]
fn addon_file() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let address = addon_file as *const () as *const libc::c_void;
    // SAFETY: any address may be asked about; dli_fname, when set, is a
    // NUL-terminated string owned by the loader for as long as the module is loaded.
    let name = unsafe {
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname)
    };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    path.is_absolute().then_some(path)
}

/// The file this code was loaded from (the `.node` file), by the address of
/// one of its functions.
#[cfg(windows)]
fn addon_file() -> Option<PathBuf> {
    use std::os::windows::ffi::OsStringExt;
    use windows_sys::Win32::System::LibraryLoader::{
        GetModuleFileNameW, GetModuleHandleExW, GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
        GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
    };
    let mut module = std::ptr::null_mut();
    let flags =
        GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT;
    // SAFETY: with FROM_ADDRESS the name argument is an address inside the
    // module; `module` receives its handle without a reference taken.
    let found =
        unsafe { GetModuleHandleExW(flags, addon_file as *const () as *const u16, &mut module) };
    if found == 0 {
        return None;
    }
    let mut buffer = vec![0u16; 32 * 1024];
    // SAFETY: `buffer` holds `buffer.len()` u16s for the call to fill.
    let len = unsafe { GetModuleFileNameW(module, buffer.as_mut_ptr(), buffer.len() as u32) };
    let len = len as usize;
    (len > 0 && len < buffer.len())
        .then(|| PathBuf::from(std::ffi::OsString::from_wide(&buffer[..len])))
}
