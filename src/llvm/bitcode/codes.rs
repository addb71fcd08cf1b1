//! The record codes of LLVM bitcode, by block, as LLVM numbers them (both writers use them).

#![allow(missing_docs)] // Each is LLVM's record code of the same name.

pub const IDENTIFICATION_STRING: u64 = 1;
pub const IDENTIFICATION_EPOCH: u64 = 2;

pub const MODULE_VERSION: u64 = 1;
pub const MODULE_TRIPLE: u64 = 2;
pub const MODULE_SECTIONNAME: u64 = 5;
pub const MODULE_GLOBALVAR: u64 = 7;
pub const MODULE_FUNCTION: u64 = 8;
pub const MODULE_VSTOFFSET: u64 = 13;
pub const MODULE_SOURCE_FILENAME: u64 = 16;
pub const MODULE_GUIDLIST: u64 = 20;

pub const TYPE_NUMENTRY: u64 = 1;
pub const TYPE_VOID: u64 = 2;
pub const TYPE_LABEL: u64 = 5;
pub const TYPE_INTEGER: u64 = 7;
pub const TYPE_ARRAY: u64 = 11;
pub const TYPE_METADATA: u64 = 16;
pub const TYPE_STRUCT_ANON: u64 = 18;
pub const TYPE_STRUCT_NAME: u64 = 19;
pub const TYPE_STRUCT_NAMED: u64 = 20;
pub const TYPE_FUNCTION: u64 = 21;
pub const TYPE_OPAQUE_POINTER: u64 = 25;

pub const CST_SETTYPE: u64 = 1;
pub const CST_NULL: u64 = 2;
pub const CST_INTEGER: u64 = 4;
pub const CST_AGGREGATE: u64 = 7;
pub const CST_STRING: u64 = 8;
pub const CST_CSTRING: u64 = 9;
pub const CST_CE_GEP_OLD: u64 = 12;
pub const CST_CE_INBOUNDS_GEP: u64 = 20;
pub const CST_CE_GEP: u64 = 32;

pub const DECLAREBLOCKS: u64 = 1;
pub const INST_BINOP: u64 = 2;
pub const INST_CAST: u64 = 3;
pub const INST_RET: u64 = 10;
pub const INST_BR: u64 = 11;
pub const INST_SWITCH: u64 = 12;
pub const INST_PHI: u64 = 16;
pub const INST_LOAD: u64 = 20;
pub const INST_CMP2: u64 = 28;
pub const INST_CALL: u64 = 34;
pub const INST_GEP: u64 = 43;
pub const INST_STORE: u64 = 44;

pub const VST_ENTRY: u64 = 1;
pub const VST_BBENTRY: u64 = 2;
pub const VST_FNENTRY: u64 = 3;

pub const METADATA_KIND: u64 = 6;
pub const OPERAND_BUNDLE_TAG: u64 = 1;
pub const SYNC_SCOPE_NAME: u64 = 1;
