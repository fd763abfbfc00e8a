fn main() {
    // A darwin cross build links against the framework stubs under SDKROOT
    // (scripts/build/build-all.js writes them): relink when they change.
    println!("cargo:rerun-if-env-changed=SDKROOT");
    if let Some(sdk) = std::env::var_os("SDKROOT") {
        println!("cargo:rerun-if-changed={}", sdk.to_string_lossy());
    }
    napi_build::setup();
}
