//! The plugin stays loaded until the linker exits (`-z nodelete`): its work runs at exit, and a
//! linker that unloads its plugins first would otherwise run it while the loader holds its
//! lock, where no thread can start.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
