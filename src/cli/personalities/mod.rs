//! The LLVM-named front doors: clang-offload-bundler (`bundler`), clang-offload-packager and
//! llvm-offload-binary (`packager`), clang-offload-wrapper (`clang_offload_wrapper`) and
//! llvm-offload-wrapper (`llvm_offload_wrapper`), with what the two wrappers' command lines
//! share (`wrapper_args`), over LLVM's `cl` option syntax (`llvm_cl`).

pub mod bundler;
pub mod clang_offload_wrapper;
pub mod llvm_cl;
pub mod llvm_offload_wrapper;
pub mod packager;
pub mod wrapper_args;
