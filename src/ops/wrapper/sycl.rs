//! The SYCL module of LLVM 23's `llvm-offload-wrapper --kind=sycl`: the image in
//! `.llvm.offloading`, handed with its size to `__sycl_register_lib` by a constructor and to
//! `__sycl_unregister_lib` by a destructor, both of priority 1.

use crate::llvm::ir::module::{global, Const, Function, Global, Module, Type, Value};
use crate::ops::wrapper::ir::{
    block, call, inst, internal_constant, ret, startup_in, structors, Format,
};
use crate::target::processor::LlvmVersion;

/// The image's global.
const BINARY: &str = ".sycl_offloading.binary";

/// The module registering the image of `len` bytes (LLVM's tool wraps the first image it is
/// given and ignores the others) for `triple`.
pub fn module(triple: &str, len: u64) -> Module {
    let image = Global {
        unnamed_addr: true,
        section: Some(".llvm.offloading".into()),
        ..internal_constant(BINARY, Const::Image { index: 0, len })
    };
    let section = Format::of(triple, LlvmVersion::V23).startup;
    Module {
        id: "offload.wrapper.module".into(),
        triple: triple.to_string(),
        structs: Vec::new(),
        globals: vec![
            image,
            structors("llvm.global_ctors", 1, "sycl.descriptor_reg"),
            structors("llvm.global_dtors", 1, "sycl.descriptor_unreg"),
        ],
        functions: vec![
            calling(section, "sycl.descriptor_reg", "__sycl_register_lib", len),
            runtime("__sycl_register_lib"),
            calling(
                section,
                "sycl.descriptor_unreg",
                "__sycl_unregister_lib",
                len,
            ),
            runtime("__sycl_unregister_lib"),
        ],
    }
}

/// `void f(ptr, i64)`, the runtime's.
fn runtime(name: &str) -> Function {
    Function::declare(name, Type::Void, vec![Type::Ptr, Type::Int(64)])
}

/// The startup function `name`, in `section`, that calls `callee` with the image and its size.
fn calling(section: &str, name: &str, callee: &str, len: u64) -> Function {
    let args = vec![
        Value::from(global(BINARY)),
        Value::from(Const::Int(64, len as i64)),
    ];
    startup_in(
        section,
        name,
        &[],
        vec![block("entry", vec![inst(call(callee, args)), ret()])],
    )
}
