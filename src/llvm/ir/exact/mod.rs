//! A [`Module`] as LLVM's bitcode writer writes it, byte for byte, for the releases of
//! [`Release`] (23.1.4 and 22.1.8): the identification
//! block, the module block (version, BLOCKINFO, types, module information, constants,
//! metadata kinds, operand bundle tags, synchronization scopes, function blocks, the value
//! symbol table their offsets are in), then the string table. LLVM leaves out the irsymtab of
//! a module without a data layout, but the strings it would name are already in the table.
//!
//! Images are not held: each is a hole of the [`Bitstream`] the caller fills from its file,
//! whose form ([`ImageContent`]) a first pass over the file told.

mod function;
mod image;
mod tables;
mod values;

pub use image::{ImageContent, ImageForm, ImageScan};

use std::collections::HashMap;

use crate::llvm::bitcode::reader::{block_id, BLOB_RECORD, RAW_MAGIC};
use crate::llvm::bitcode::writer::{
    char6, Abbrev, AbbrevOp, Bitstream, BitstreamWriter, BlockTooLong, Field,
};
use crate::llvm::ir::module::{Const, Module, Type};

use tables::abbrev;
use values::{bits_for, Numbering, TypeEntry};

/// What the writers of two releases write differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The release, as the identification block and the irsymtab name it.
    pub version: &'static str,
    /// How many of [`tables::METADATA_KINDS`] its context knows.
    metadata_kinds: usize,
    /// Its context's operand bundle tags.
    bundle_tags: &'static [&'static str],
    /// Whether the module block has a GUIDLIST record.
    guid_list: bool,
    /// Whether the constants block has the BLOCKINFO abbreviation of code 35.
    constants_35: bool,
    /// The width of a cast's flags in its BLOCKINFO abbreviation.
    cast_flags_bits: u32,
    /// How many operands a function record has.
    function_operands: usize,
    /// Whether its `StringMap` probes linearly (else quadratically).
    linear_probing: bool,
}

/// LLVM 23.1.4.
pub const LLVM_23: Release = Release {
    version: "23.1.4",
    metadata_kinds: 55,
    bundle_tags: &tables::BUNDLE_TAGS,
    guid_list: true,
    constants_35: true,
    cast_flags_bits: 9,
    function_operands: 22,
    linear_probing: true,
};

/// LLVM 22.1.8.
pub const LLVM_22: Release = Release {
    version: "22.1.8",
    metadata_kinds: 47,
    bundle_tags: &tables::BUNDLE_TAGS_22,
    guid_list: false,
    constants_35: false,
    cast_flags_bits: 8,
    function_operands: 21,
    linear_probing: false,
};

use crate::llvm::bitcode::codes as code;
use crate::llvm::ir::bitcode::{align, chars, linkage};

/// Blocks the bitcode reader of this crate has no use for.
mod block {
    pub const BLOCKINFO: u64 = 0;
    pub const OPERAND_BUNDLE_TAGS: u64 = 21;
    pub const METADATA_KIND: u64 = 22;
    pub const SYNC_SCOPE_NAMES: u64 = 26;
}

/// The module version whose function bodies number values relative to the instruction and
/// whose names are in the STRTAB block.
const MODULE_VERSION: u64 = 2;

/// `value` as a signed VBR operand: the magnitude shifted left, the sign in bit 0.
fn signed(value: i64) -> u64 {
    if value >= 0 {
        (value as u64) << 1
    } else {
        (value.unsigned_abs() << 1) | 1
    }
}

/// The narrowest encoding of a string's characters LLVM picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StringEncoding {
    Char6,
    Fixed7,
    Fixed8,
}

impl StringEncoding {
    fn of(s: &[u8]) -> StringEncoding {
        if s.iter().all(|&c| char6(c).is_some()) {
            StringEncoding::Char6
        } else if s.iter().all(|&c| c < 0x80) {
            StringEncoding::Fixed7
        } else {
            StringEncoding::Fixed8
        }
    }

    fn field(self) -> Field {
        match self {
            StringEncoding::Char6 => Field::Char6,
            StringEncoding::Fixed7 => Field::Fixed(7),
            StringEncoding::Fixed8 => Field::Fixed(8),
        }
    }

    /// The operand of the character `c`.
    fn value(self, c: u8) -> u64 {
        match self {
            StringEncoding::Char6 => char6(c).unwrap_or_default(),
            _ => u64::from(c),
        }
    }
}

/// The abbreviations of the BLOCKINFO block, by block.
struct Abbrevs {
    vst: Vec<Abbrev>,
    constants: Vec<Abbrev>,
    function: Vec<Abbrev>,
}

/// The abbreviation of ID `id` of `list`, which starts at ID 4.
fn nth(list: &[Abbrev], id: u64) -> &Abbrev {
    const EMPTY: &Abbrev = &Abbrev(Vec::new());
    usize::try_from(id - 4)
        .ok()
        .and_then(|i| list.get(i))
        .unwrap_or(EMPTY)
}

impl Abbrevs {
    fn vst(&self, id: u64) -> &Abbrev {
        nth(&self.vst, id)
    }

    fn constants(&self, id: u64) -> &Abbrev {
        nth(&self.constants, id)
    }

    fn function(&self, id: u64) -> &Abbrev {
        nth(&self.function, id)
    }
}

/// The STRTAB block's strings, each once.
#[derive(Default)]
struct StringTable {
    bytes: Vec<u8>,
    offsets: HashMap<Vec<u8>, u64>,
}

impl StringTable {
    /// The offset of `s`, added when new, and its size.
    fn add(&mut self, s: &str) -> [u64; 2] {
        let next = self.bytes.len() as u64;
        let at = *self.offsets.entry(s.as_bytes().to_vec()).or_insert(next);
        if at == next {
            self.bytes.extend_from_slice(s.as_bytes());
        }
        [at, s.len() as u64]
    }
}

/// The 64-bit GUID of a global value's name (the low half of its MD5), which the caller
/// computes.
pub type Guid<'a> = &'a dyn Fn(&[u8]) -> u64;

/// Writes `module` as `release` does; image `i`, whose content is `images[i]`, is the hole of
/// ID `i`.
pub fn write(
    module: &Module,
    images: &[ImageContent],
    guid: Guid,
    release: &Release,
) -> Result<Bitstream, BlockTooLong> {
    let numbering = Numbering::of(module);
    let mut w = BitstreamWriter::new(RAW_MAGIC);
    write_identification(&mut w, release)?;
    w.enter_block(block_id::MODULE, 3);
    w.record(code::MODULE_VERSION, &[MODULE_VERSION]);
    let abbrevs = write_blockinfo(&mut w, numbering.types.bits(), release)?;
    write_types(&mut w, &numbering)?;
    let mut strtab = StringTable::default();
    let guid = release.guid_list.then_some(guid);
    let vst_offset = write_module_info(&mut w, &numbering, &mut strtab, guid, release);
    let constants = &numbering.constants;
    write_constants(
        &mut w,
        &numbering,
        &abbrevs,
        constants,
        numbering.global_count,
        Some(images),
    )?;
    write_context_names(&mut w, release)?;
    let mut offsets = Vec::new();
    for (i, f) in module.functions.iter().enumerate() {
        if let Some(body) = &f.body {
            let id = module.globals.len() + i;
            offsets.push((id as u64, w.bit_position() / 32));
            function::write(&mut w, &numbering, &abbrevs, f, body, release)?;
        }
    }
    w.backpatch(vst_offset, (w.bit_position() / 32) as u32);
    w.enter_block(block_id::VALUE_SYMTAB, 4);
    let entry = Abbrev(vec![
        AbbrevOp::Literal(code::VST_FNENTRY),
        AbbrevOp::Scalar(Field::Vbr(8)),
        AbbrevOp::Scalar(Field::Vbr(8)),
    ]);
    let id = w.define(&entry);
    for (value, offset) in offsets {
        w.abbreviated(id, &entry, &[code::VST_FNENTRY, value, offset]);
    }
    w.end_block()?;
    w.end_block()?;
    for s in [release.version, &module.triple, &module.id] {
        strtab.add(s);
    }
    w.enter_block(block_id::STRTAB, 3);
    let blob = w.define_blob_abbrev(BLOB_RECORD);
    w.blob_record(blob, &strtab.bytes);
    w.end_block()?;
    Ok(w.finish())
}

/// The identification block: the producer and the epoch.
fn write_identification(w: &mut BitstreamWriter, release: &Release) -> Result<(), BlockTooLong> {
    w.enter_block(block_id::IDENTIFICATION, 5);
    let string = Abbrev(vec![
        AbbrevOp::Literal(code::IDENTIFICATION_STRING),
        AbbrevOp::Array(Field::Char6),
    ]);
    let id = w.define(&string);
    let producer = format!("LLVM{}", release.version);
    let mut values = vec![code::IDENTIFICATION_STRING];
    values.extend(producer.bytes().map(|c| char6(c).unwrap_or_default()));
    w.abbreviated(id, &string, &values);
    let epoch = Abbrev(vec![
        AbbrevOp::Literal(code::IDENTIFICATION_EPOCH),
        AbbrevOp::Scalar(Field::Vbr(6)),
    ]);
    let id = w.define(&epoch);
    w.abbreviated(id, &epoch, &[code::IDENTIFICATION_EPOCH, 0]);
    w.end_block()
}

/// The BLOCKINFO block, for type IDs of `type_bits` bits.
fn write_blockinfo(
    w: &mut BitstreamWriter,
    type_bits: u32,
    release: &Release,
) -> Result<Abbrevs, BlockTooLong> {
    let mut abbrevs = Abbrevs {
        vst: Vec::new(),
        constants: Vec::new(),
        function: Vec::new(),
    };
    w.enter_block(block::BLOCKINFO, 2);
    for (target, abbrev) in tables::blockinfo(type_bits, release) {
        w.define_for_block(target, &abbrev);
        match target {
            block_id::VALUE_SYMTAB => abbrevs.vst.push(abbrev),
            block_id::CONSTANTS => abbrevs.constants.push(abbrev),
            _ => abbrevs.function.push(abbrev),
        }
    }
    w.end_block()?;
    Ok(abbrevs)
}

/// The type table.
fn write_types(w: &mut BitstreamWriter, numbering: &Numbering) -> Result<(), BlockTooLong> {
    let types = &numbering.types;
    let n = Field::Fixed(types.bits());
    let lit = AbbrevOp::Literal;
    let list = [
        Abbrev(vec![lit(code::TYPE_OPAQUE_POINTER), lit(0)]),
        Abbrev(vec![
            lit(code::TYPE_FUNCTION),
            AbbrevOp::Scalar(Field::Fixed(1)),
            AbbrevOp::Array(n),
        ]),
        Abbrev(vec![
            lit(code::TYPE_STRUCT_ANON),
            AbbrevOp::Scalar(Field::Fixed(1)),
            AbbrevOp::Array(n),
        ]),
        Abbrev(vec![
            lit(code::TYPE_STRUCT_NAME),
            AbbrevOp::Array(Field::Char6),
        ]),
        Abbrev(vec![
            lit(code::TYPE_STRUCT_NAMED),
            AbbrevOp::Scalar(Field::Fixed(1)),
            AbbrevOp::Array(n),
        ]),
        Abbrev(vec![
            lit(code::TYPE_ARRAY),
            AbbrevOp::Scalar(Field::Vbr(8)),
            AbbrevOp::Scalar(n),
        ]),
    ];
    w.enter_block(block_id::TYPE, 4);
    let ids: Vec<u64> = list.iter().map(|a| w.define(a)).collect();
    let [pointer, function, anon, name, named, array] =
        [0, 1, 2, 3, 4, 5].map(|i| (ids[i], &list[i]));
    w.record(code::TYPE_NUMENTRY, &[types.list.len() as u64]);
    let ids_of = |tys: &[Type]| tys.iter().map(|t| types.id(t)).collect::<Vec<u64>>();
    for entry in &types.list {
        let ty = match entry {
            TypeEntry::Metadata => {
                w.record(code::TYPE_METADATA, &[]);
                continue;
            }
            TypeEntry::Label => {
                w.record(code::TYPE_LABEL, &[]);
                continue;
            }
            TypeEntry::Of(ty) => ty,
        };
        match ty {
            Type::Void => w.record(code::TYPE_VOID, &[]),
            Type::Int(bits) => w.record(code::TYPE_INTEGER, &[u64::from(*bits)]),
            Type::Ptr => w.abbreviated(pointer.0, pointer.1, &[code::TYPE_OPAQUE_POINTER, 0]),
            Type::Array(count, element) => {
                let values = [code::TYPE_ARRAY, *count, types.id(element)];
                w.abbreviated(array.0, array.1, &values);
            }
            Type::Struct(fields) => {
                let values = [vec![code::TYPE_STRUCT_ANON, 0], ids_of(fields)].concat();
                w.abbreviated(anon.0, anon.1, &values);
            }
            Type::Named(i) => {
                let s = &numbering.module.structs[*i];
                let bytes = s.name.as_bytes();
                if StringEncoding::of(bytes) == StringEncoding::Char6 {
                    let mut values = vec![code::TYPE_STRUCT_NAME];
                    values.extend(bytes.iter().map(|&c| char6(c).unwrap_or_default()));
                    w.abbreviated(name.0, name.1, &values);
                } else {
                    let values: Vec<u64> = bytes.iter().map(|&c| u64::from(c)).collect();
                    w.record(code::TYPE_STRUCT_NAME, &values);
                }
                let values = [vec![code::TYPE_STRUCT_NAMED, 0], ids_of(&s.fields)].concat();
                w.abbreviated(named.0, named.1, &values);
            }
            Type::Function(ret, params) => {
                let mut values = vec![code::TYPE_FUNCTION, 0, types.id(ret)];
                values.extend(ids_of(params));
                w.abbreviated(function.0, function.1, &values);
            }
        }
    }
    w.end_block()
}

mod info;
use info::write_module_info;

/// The constants `list`, numbered from `first`; with `images`, the module's (whose
/// aggregates and strings have abbreviations of their own).
fn write_constants(
    w: &mut BitstreamWriter,
    numbering: &Numbering,
    abbrevs: &Abbrevs,
    list: &[Const],
    first: u64,
    images: Option<&[ImageContent]>,
) -> Result<(), BlockTooLong> {
    w.enter_block(block_id::CONSTANTS, 4);
    let module_level = images.map(|_| {
        let last = numbering.count();
        let lit = AbbrevOp::Literal;
        let aggregate = Abbrev(vec![
            lit(code::CST_AGGREGATE),
            AbbrevOp::Array(Field::Fixed(bits_for(last + 1))),
        ]);
        let string = Abbrev(vec![
            lit(code::CST_STRING),
            AbbrevOp::Array(Field::Fixed(8)),
        ]);
        let cstring7 = Abbrev(vec![
            lit(code::CST_CSTRING),
            AbbrevOp::Array(Field::Fixed(7)),
        ]);
        let cstring6 = Abbrev(vec![lit(code::CST_CSTRING), AbbrevOp::Array(Field::Char6)]);
        [aggregate, string, cstring7, cstring6].map(|a| (w.define(&a), a))
    });
    let id_of = |c: &Const| match c {
        Const::Global(name) => numbering.global(name),
        c => numbering
            .constant_ids
            .get(c)
            .copied()
            .or_else(|| list.iter().position(|x| x == c).map(|i| first + i as u64))
            .unwrap_or_default(),
    };
    let types = &numbering.types;
    let mut current = None;
    for c in list {
        let ty = types.id(&c.ty());
        if current != Some(ty) {
            let settype = abbrev::CONSTANTS_SETTYPE;
            w.abbreviated(
                settype,
                abbrevs.constants(settype),
                &[code::CST_SETTYPE, ty],
            );
            current = Some(ty);
        }
        match c {
            Const::Int(_, 0) | Const::Null(_) => w.record(code::CST_NULL, &[]),
            Const::Int(_, v) => {
                let integer = abbrev::CONSTANTS_INTEGER;
                w.abbreviated(
                    integer,
                    abbrevs.constants(integer),
                    &[code::CST_INTEGER, signed(*v)],
                );
            }
            Const::Struct(_, items) | Const::Array(_, items) => {
                let ids: Vec<u64> = items.iter().map(id_of).collect();
                match &module_level {
                    Some([(id, aggregate), ..]) => {
                        let values = [vec![code::CST_AGGREGATE], ids].concat();
                        w.abbreviated(*id, aggregate, &values);
                    }
                    None => w.record(code::CST_AGGREGATE, &ids),
                }
            }
            Const::Bytes(bytes) => bytes_record(w, module_level.as_ref(), bytes),
            Const::Image { index, .. } => {
                let content = images.and_then(|i| i.get(*index));
                image_record(w, module_level.as_ref(), *index, content);
            }
            Const::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let mut ops = vec![types.id(source), if *inbounds { 3 } else { 0 }];
                for operand in std::iter::once(&**base).chain(indices) {
                    ops.push(types.id(&operand.ty()));
                    ops.push(id_of(operand));
                }
                w.record(code::CST_CE_GEP, &ops);
            }
            Const::Global(_) => {}
        }
    }
    w.end_block()
}

/// The module's string abbreviations: aggregate, string, 7-bit and 6-bit C strings.
type StringAbbrevs = [(u64, Abbrev); 4];

/// The record of the byte array `bytes`.
fn bytes_record(w: &mut BitstreamWriter, abbrevs: Option<&StringAbbrevs>, bytes: &[u8]) {
    let content = ImageContent::of(bytes);
    let count = usize::try_from(content.count()).unwrap_or_default();
    let body = bytes.get(..count).unwrap_or_default();
    let values = |code| [vec![code], body.iter().map(|&b| u64::from(b)).collect()].concat();
    match (content.form, abbrevs) {
        (ImageForm::Zero, _) => w.record(code::CST_NULL, &[]),
        (ImageForm::String, Some([_, (id, a), ..])) => {
            w.abbreviated(*id, a, &values(code::CST_STRING))
        }
        (ImageForm::CString(Field::Fixed(7)), Some([_, _, (id, a), _])) => {
            w.abbreviated(*id, a, &values(code::CST_CSTRING))
        }
        (ImageForm::CString(Field::Char6), Some([_, _, _, (id, a)])) => {
            let mut v = vec![code::CST_CSTRING];
            v.extend(body.iter().map(|&c| char6(c).unwrap_or_default()));
            w.abbreviated(*id, a, &v);
        }
        (ImageForm::String, _) => w.record(code::CST_STRING, &values(code::CST_STRING)[1..]),
        (ImageForm::CString(_), _) => w.record(code::CST_CSTRING, &values(code::CST_CSTRING)[1..]),
    }
}

/// The record of image `index`, whose bytes are a hole.
fn image_record(
    w: &mut BitstreamWriter,
    abbrevs: Option<&StringAbbrevs>,
    index: usize,
    content: Option<&ImageContent>,
) {
    let Some(content) = content else {
        return w.record(code::CST_NULL, &[]);
    };
    let (count, bits) = (content.count(), content.bits);
    match (content.form, abbrevs) {
        (ImageForm::Zero, _) | (_, None) => w.record(code::CST_NULL, &[]),
        (ImageForm::String, Some([_, (id, _), ..])) => {
            w.abbreviated_hole(*id, Field::Fixed(8), index, count, bits)
        }
        (ImageForm::CString(Field::Fixed(7)), Some([_, _, (id, _), _])) => {
            w.abbreviated_hole(*id, Field::Fixed(7), index, count, bits)
        }
        (ImageForm::CString(Field::Char6), Some([_, _, _, (id, _)])) => {
            w.abbreviated_hole(*id, Field::Char6, index, count, bits)
        }
        (ImageForm::CString(_), Some(_)) => {
            w.unabbreviated_hole(code::CST_CSTRING, index, count, bits)
        }
    }
}

/// The names the context knows: metadata kinds, operand bundle tags, synchronization scopes.
fn write_context_names(w: &mut BitstreamWriter, release: &Release) -> Result<(), BlockTooLong> {
    w.enter_block(block::METADATA_KIND, 3);
    let kinds = tables::METADATA_KINDS.iter().take(release.metadata_kinds);
    for (i, kind) in kinds.enumerate() {
        let values = [vec![i as u64], chars(kind)].concat();
        w.record(code::METADATA_KIND, &values);
    }
    w.end_block()?;
    w.enter_block(block::OPERAND_BUNDLE_TAGS, 3);
    for tag in release.bundle_tags {
        w.record(code::OPERAND_BUNDLE_TAG, &chars(tag));
    }
    w.end_block()?;
    w.enter_block(block::SYNC_SCOPE_NAMES, 2);
    for scope in tables::SYNC_SCOPES {
        w.record(code::SYNC_SCOPE_NAME, &chars(scope));
    }
    w.end_block()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::wrapper::offload::llvm_offload_wrapper_of;
    use crate::ops::wrapper::{Made, OffloadKind, Relocatable};
    use crate::target::processor::LlvmVersion;

    #[test]
    fn each_release_names_itself_and_keeps_the_symbol_table_strings() {
        for (release, llvm) in [(LLVM_23, LlvmVersion::V23), (LLVM_22, LlvmVersion::V22)] {
            let made = Made {
                kind: OffloadKind::OpenMp,
                llvm,
                relocatable: Relocatable::No,
            };
            let triple = "x86_64-pc-linux-gnu";
            let module = llvm_offload_wrapper_of(&made, triple, &[5], &[]);
            let images = [ImageContent::of(b"hello")];
            let stream = write(&module, &images, &|_| 1, &release).unwrap();
            let bytes = stream.to_bytes(|_| b"hello");
            assert!(bytes.starts_with(&RAW_MAGIC));
            assert_eq!(bytes.len() % 4, 0);
            let tail = format!("{}{triple}offload.wrapper.module", release.version);
            let at = bytes.windows(tail.len()).position(|w| w == tail.as_bytes());
            assert!(at.is_some(), "{}", release.version);
        }
    }
}
