/*
 * A stand-in for Windows' bcryptprimitives.dll, for wine 8 only (Debian 12's
 * wine lacks it; Windows has shipped it since Windows 8 and newer wine has
 * it). Rust's standard library and the getrandom crate take random bytes
 * from its ProcessPrng; this one draws them from RtlGenRandom (advapi32),
 * wine's system random source. scripts/check/test-windows.js compiles it with
 * mingw-w64 into the test's wine prefix when that prefix has no such DLL.
 * It is never part of a built package.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, chunk)) return FALSE;
    data += chunk;
    len -= chunk;
  }
  return TRUE;
}
