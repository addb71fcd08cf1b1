//! What LLVM's bitcode writer writes the same way into every module, release by release: the
//! abbreviations of its BLOCKINFO block, and the names its context knows (metadata kinds,
//! operand bundle tags, synchronization scopes).

use crate::llvm::bitcode::writer::{Abbrev, AbbrevOp, Field};

/// The metadata kinds of an LLVM 23.1.4 context, in the order of their IDs; LLVM 22.1.8's are
/// the first 47.
pub(super) const METADATA_KINDS: [&str; 55] = [
    "dbg",
    "tbaa",
    "prof",
    "fpmath",
    "range",
    "tbaa.struct",
    "invariant.load",
    "alias.scope",
    "noalias",
    "nontemporal",
    "llvm.mem.parallel_loop_access",
    "nonnull",
    "dereferenceable",
    "dereferenceable_or_null",
    "make.implicit",
    "unpredictable",
    "invariant.group",
    "align",
    "llvm.loop",
    "type",
    "section_prefix",
    "absolute_symbol",
    "associated",
    "callees",
    "irr_loop",
    "llvm.access.group",
    "callback",
    "llvm.preserve.access.index",
    "vcall_visibility",
    "noundef",
    "annotation",
    "nosanitize",
    "func_sanitize",
    "exclude",
    "memprof",
    "callsite",
    "kcfi_type",
    "pcsections",
    "DIAssignID",
    "coro.outside.frame",
    "mmra",
    "noalias.addrspace",
    "callee_type",
    "nofree",
    "captures",
    "alloc_token",
    "implicit.ref",
    "nofpclass",
    "call_target",
    "inline_history",
    "elf_section_properties",
    "guid",
    "mem.cache_hint",
    "block.uniformity.profile",
    "callgraph",
];

/// The operand bundle tags of an LLVM 23.1.4 context, in the order of their IDs.
pub(super) const BUNDLE_TAGS: [&str; 19] = [
    "align",
    "cold",
    "dereferenceable",
    "dereferenceable_or_null",
    "ignore",
    "nonnull",
    "noundef",
    "separate_storage",
    "deopt",
    "funclet",
    "gc-transition",
    "cfguardtarget",
    "preallocated",
    "gc-live",
    "clang.arc.attachedcall",
    "ptrauth",
    "kcfi",
    "convergencectrl",
    "deactivation-symbol",
];

/// The operand bundle tags of an LLVM 22.1.8 context, in the order of their IDs.
pub(super) const BUNDLE_TAGS_22: [&str; 12] = [
    "deopt",
    "funclet",
    "gc-transition",
    "cfguardtarget",
    "preallocated",
    "gc-live",
    "clang.arc.attachedcall",
    "ptrauth",
    "kcfi",
    "convergencectrl",
    "align",
    "deactivation-symbol",
];

/// The synchronization scopes of an LLVM 23.1.4 context, in the order of their IDs.
pub(super) const SYNC_SCOPES: [&str; 2] = ["singlethread", ""];

use AbbrevOp::{Array, Literal as L, Scalar};
use Field::{Char6, Fixed, Vbr};

/// The abbreviations of the BLOCKINFO block, block by block, for a module whose type IDs
/// take `type_bits` bits. In a function block they are numbered from 4 in this order:
/// load, store, unary operators (2), binary operators (2), casts (2), `ret` (2), `br` (2),
/// `unreachable`, `getelementptr`, comparisons (2), debug records, debug locations.
///
/// LLVM 22 has no constants abbreviation of code 35, and gives the flags of a cast 8 bits.
pub(super) fn blockinfo(type_bits: u32, release: &super::Release) -> Vec<(u64, Abbrev)> {
    use crate::llvm::bitcode::reader::block_id::{CONSTANTS, FUNCTION, VALUE_SYMTAB};
    let n = Scalar(Fixed(type_bits));
    let v = |w| Scalar(Vbr(w));
    let f = |w| Scalar(Fixed(w));
    let vst = [
        vec![f(3), v(8), Array(Fixed(8))],
        vec![L(1), v(8), Array(Fixed(7))],
        vec![L(1), v(8), Array(Char6)],
        vec![L(2), v(8), Array(Char6)],
    ];
    let mut constants = vec![
        vec![L(1), n],
        vec![L(4), v(8)],
        vec![L(35), v(8)],
        vec![L(11), f(4), n, v(8)],
        vec![L(2)],
    ];
    if !release.constants_35 {
        constants.remove(2);
    }
    let function = [
        vec![L(20), v(6), n, v(4), f(1)],
        vec![L(44), v(6), v(6), v(4), f(1)],
        vec![L(56), v(6), f(4)],
        vec![L(56), v(6), f(4), f(8)],
        vec![L(2), v(6), v(6), f(4)],
        vec![L(2), v(6), v(6), f(4), f(8)],
        vec![L(3), v(6), n, f(4)],
        vec![L(3), v(6), n, f(4), f(release.cast_flags_bits)],
        vec![L(10)],
        vec![L(10), v(6)],
        vec![L(11), v(6)],
        vec![L(11), v(6), v(6), v(6)],
        vec![L(15)],
        vec![L(43), f(3), n, Array(Vbr(6))],
        vec![L(28), v(6), v(6), f(6)],
        vec![L(28), v(6), v(6), f(6), f(8)],
        vec![L(64), v(7), v(7), v(7), v(6)],
        vec![L(35), v(6), v(8), v(6), v(6), f(1), v(6), v(3)],
    ];
    let tag = |block: u64, list: &[Vec<AbbrevOp>]| -> Vec<(u64, Abbrev)> {
        list.iter()
            .map(|ops| (block, Abbrev(ops.clone())))
            .collect()
    };
    [
        tag(VALUE_SYMTAB, &vst),
        tag(CONSTANTS, &constants),
        tag(FUNCTION, &function),
    ]
    .concat()
}

/// The IDs of the BLOCKINFO abbreviations the writer uses.
pub(super) mod abbrev {
    pub const VST_ENTRY_8: u64 = 4;
    pub const VST_ENTRY_7: u64 = 5;
    pub const VST_ENTRY_6: u64 = 6;
    pub const VST_BBENTRY_6: u64 = 7;
    pub const CONSTANTS_SETTYPE: u64 = 4;
    pub const CONSTANTS_INTEGER: u64 = 5;
    pub const LOAD: u64 = 4;
    pub const STORE: u64 = 5;
    pub const BINOP: u64 = 8;
    pub const CAST: u64 = 10;
    pub const RET_VOID: u64 = 12;
    pub const BR_UNCOND: u64 = 14;
    pub const BR_COND: u64 = 15;
    pub const GEP: u64 = 17;
    pub const CMP: u64 = 18;
}
