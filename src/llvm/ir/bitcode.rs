//! A [`Module`] as LLVM bitcode, in the layout of LLVM 17 and later: opaque pointers,
//! module version 2 (relative value numbers in function bodies, names in a STRTAB block), an
//! IDENTIFICATION block first. Function bodies are found in the order of the function records,
//! so no value symbol table offset is written.
//!
//! Every constant, those the instructions use included, is in the module's constants block.
//! An image is a STRING constant whose bytes are one blob operand; LLVM reads a blob operand
//! the code does not ask a blob of as one operand per byte, so it reads back as the byte
//! array. The blob is a hole of the [`Bitstream`], filled by the caller from the image file.

use std::collections::HashMap;

use crate::llvm::bitcode::reader::{block_id as block, BLOB_RECORD, RAW_MAGIC};
use crate::llvm::bitcode::writer::{Bitstream, BitstreamWriter, BlockTooLong};
use crate::llvm::ir::module::{
    BinaryOp, Body, Const, Function, Linkage, Module, Op, Predicate, Type, Value,
};

use crate::llvm::bitcode::codes as code;

/// The module version whose function bodies number values relative to the instruction and
/// whose names are in the STRTAB block.
const MODULE_VERSION: u64 = 2;

/// The bit of a call's calling-convention operand saying the function type follows.
const CALL_EXPLICIT_TYPE: u64 = 1 << 15;

/// The bits of a GEP's flags for `inbounds`: in bounds, and no unsigned-signed wrap.
const GEP_INBOUNDS: u64 = 0b11;

/// Operand codes of the instructions used (`bitc::BinaryOpcodes`, `CastOpcodes`, predicates).
const BINOP_LSHR: u64 = 8;
const BINOP_AND: u64 = 10;
const CAST_TRUNC: u64 = 0;
const ICMP_EQ: u64 = 32;
const ICMP_NE: u64 = 33;

/// The bits of a global's sanitizer operand: `no_sanitize_address`, `no_sanitize_hwaddress`.
const SANITIZE_NO_ADDRESS: u64 = 1;
const SANITIZE_NO_HWADDRESS: u64 = 2;

/// The identification block's producer.
const PRODUCER: &str = concat!("offload ", env!("CARGO_PKG_VERSION"));

/// `value` as a signed VBR operand: the magnitude shifted left, the sign in bit 0.
fn signed(value: i64) -> u64 {
    if value >= 0 {
        (value as u64) << 1
    } else {
        (value.unsigned_abs() << 1) | 1
    }
}

/// An alignment as bitcode holds it: its log2 plus one, 0 for none.
pub(super) fn align(bytes: Option<u32>) -> u64 {
    bytes.map_or(0, |b| u64::from(b.trailing_zeros()) + 1)
}

/// A linkage as bitcode numbers it.
pub(super) fn linkage(linkage: Linkage) -> u64 {
    match linkage {
        Linkage::External => 0,
        Linkage::Appending => 2,
        Linkage::Internal => 3,
        Linkage::ExternWeak => 7,
        Linkage::WeakOdr => 17,
    }
}

/// The characters of `s`, one operand each.
pub(super) fn chars(s: &str) -> Vec<u64> {
    s.bytes().map(u64::from).collect()
}

/// The type table: records in order, and each type's ID.
#[derive(Default)]
struct Types {
    ids: HashMap<Type, u64>,
    records: Vec<(u64, Vec<u64>)>,
    count: u64,
}

impl Types {
    /// The ID of `ty`, adding it (after the types it is made of) when new.
    fn id(&mut self, module: &Module, ty: &Type) -> u64 {
        if let Some(&id) = self.ids.get(ty) {
            return id;
        }
        let (code, ops) = match ty {
            Type::Void => (code::TYPE_VOID, vec![]),
            Type::Int(bits) => (code::TYPE_INTEGER, vec![u64::from(*bits)]),
            Type::Ptr => (code::TYPE_OPAQUE_POINTER, vec![0]),
            Type::Array(n, element) => (code::TYPE_ARRAY, vec![*n, self.id(module, element)]),
            Type::Struct(fields) => (code::TYPE_STRUCT_ANON, self.fields(module, fields)),
            Type::Named(i) => {
                let s = &module.structs[*i];
                let fields = self.fields(module, &s.fields);
                self.records.push((code::TYPE_STRUCT_NAME, chars(&s.name)));
                (code::TYPE_STRUCT_NAMED, fields)
            }
            Type::Function(ret, params) => {
                let mut ops = vec![0, self.id(module, ret)];
                ops.extend(params.iter().map(|p| self.id(module, p)));
                (code::TYPE_FUNCTION, ops)
            }
        };
        self.records.push((code, ops));
        let id = self.count;
        self.count += 1;
        self.ids.insert(ty.clone(), id);
        id
    }

    /// The operands of a structure: not packed, then the fields' IDs.
    fn fields(&mut self, module: &Module, fields: &[Type]) -> Vec<u64> {
        let mut ops = vec![0];
        ops.extend(fields.iter().map(|f| self.id(module, f)));
        ops
    }
}

/// The numbering of a module's values: globals, functions, then constants.
struct Values<'m> {
    module: &'m Module,
    types: Types,
    globals: HashMap<&'m str, u64>,
    constants: HashMap<Const, u64>,
    /// The constants in the order of their IDs.
    constant_list: Vec<Const>,
    /// Globals, functions and constants.
    count: u64,
}

impl<'m> Values<'m> {
    fn new(module: &'m Module) -> Values<'m> {
        let names = module
            .globals
            .iter()
            .map(|g| g.name.as_str())
            .chain(module.functions.iter().map(|f| f.name.as_str()));
        let globals: HashMap<&str, u64> = names.zip(0..).collect();
        let count = globals.len() as u64;
        Values {
            module,
            types: Types::default(),
            globals,
            constants: HashMap::new(),
            constant_list: Vec::new(),
            count,
        }
    }

    /// The numbering of `module`'s types and values, in the order LLVM numbers them.
    fn of(module: &'m Module) -> Values<'m> {
        let mut values = Values::new(module);
        values.type_id(&Type::Ptr);
        for g in &module.globals {
            values.type_id(&g.ty);
            if let Some(init) = &g.init {
                values.add_constant(init);
            }
        }
        for f in &module.functions {
            values.type_id(&f.ty());
        }
        for f in &module.functions {
            if let Some(body) = &f.body {
                values.add_body(f, body);
            }
        }
        values
    }

    fn type_id(&mut self, ty: &Type) -> u64 {
        self.types.id(self.module, ty)
    }

    /// Numbers `c` and the constants it is made of, those first.
    fn add_constant(&mut self, c: &Const) {
        self.type_id(&c.ty());
        match c {
            Const::Global(_) => return,
            Const::Struct(_, items) | Const::Array(_, items) => {
                items.iter().for_each(|i| self.add_constant(i))
            }
            Const::Gep {
                source,
                base,
                indices,
                ..
            } => {
                self.type_id(source);
                self.add_constant(base);
                indices.iter().for_each(|i| self.add_constant(i));
            }
            _ => {}
        }
        if !self.constants.contains_key(c) {
            self.constants.insert(c.clone(), self.count);
            self.constant_list.push(c.clone());
            self.count += 1;
        }
    }

    /// The ID of the constant `c`.
    fn constant(&self, c: &Const) -> u64 {
        match c {
            Const::Global(name) => self.globals[name.as_str()],
            c => self.constants[c],
        }
    }

    /// Numbers the types and constants of `function`'s body.
    fn add_body(&mut self, function: &Function, body: &Body) {
        let locals = self.module.local_types(function);
        for ty in locals.values() {
            self.type_id(ty);
        }
        let value_type = |v: &Value| crate::llvm::ir::module::value_type(v, &locals);
        for inst in body.blocks.iter().flat_map(|b| &b.insts) {
            let mut values: Vec<&Value> = Vec::new();
            match &inst.op {
                Op::Call { args, .. } => values.extend(args),
                Op::Store { value, ptr, .. } => values.extend([value, ptr]),
                Op::Load { ty, ptr, .. } => {
                    self.type_id(ty);
                    values.push(ptr);
                }
                Op::ICmp { lhs, rhs, .. } | Op::Binary { lhs, rhs, .. } => {
                    values.extend([lhs, rhs])
                }
                Op::Trunc { value, to } => {
                    self.type_id(to);
                    values.push(value);
                }
                Op::Gep {
                    source,
                    base,
                    indices,
                    ..
                } => {
                    self.type_id(source);
                    values.push(base);
                    values.extend(indices);
                }
                Op::Phi { ty, incoming } => {
                    self.type_id(ty);
                    values.extend(incoming.iter().map(|(v, _)| v));
                }
                Op::CondBr { cond, .. } => values.push(cond),
                Op::Switch { value, cases, .. } => {
                    let Type::Int(bits) = value_type(value) else {
                        unreachable!("a switch on an integer")
                    };
                    for (case, _) in cases {
                        self.add_constant(&Const::Int(bits, *case));
                    }
                    values.push(value);
                }
                Op::Br(_) | Op::RetVoid => {}
            }
            for value in values {
                self.type_id(&value_type(value));
                if let Value::Const(c) = value {
                    self.add_constant(c);
                }
            }
        }
    }
}

/// Writes `module` as bitcode; image `i` is the hole of ID `i`.
pub fn write(module: &Module) -> Result<Bitstream, BlockTooLong> {
    let values = Values::of(module);
    let mut w = BitstreamWriter::new(RAW_MAGIC);
    write_identification(&mut w)?;

    w.enter_block(block::MODULE, 3);
    w.record(code::MODULE_VERSION, &[MODULE_VERSION]);
    write_types(&mut w, &values.types)?;
    w.record(code::MODULE_TRIPLE, &chars(&module.triple));
    let sections = Sections::write(&mut w, module);
    w.record(code::MODULE_SOURCE_FILENAME, &chars(&module.id));
    let mut strtab = StringTable::default();
    write_global_vars(&mut w, &values, &sections, &mut strtab);
    write_function_records(&mut w, &values, &sections, &mut strtab);
    write_constants(&mut w, &values)?;
    for f in &module.functions {
        if let Some(body) = &f.body {
            write_function(&mut w, &values, f, body)?;
        }
    }
    w.end_block()?;

    w.enter_block(block::STRTAB, 3);
    let blob = w.define_blob_abbrev(BLOB_RECORD);
    w.blob_record(blob, &strtab.bytes);
    w.end_block()?;
    Ok(w.finish())
}

/// The identification block: the producer and the epoch.
fn write_identification(w: &mut BitstreamWriter) -> Result<(), BlockTooLong> {
    w.enter_block(block::IDENTIFICATION, 5);
    w.record(code::IDENTIFICATION_STRING, &chars(PRODUCER));
    w.record(code::IDENTIFICATION_EPOCH, &[0]);
    w.end_block()
}

/// The type table's block.
fn write_types(w: &mut BitstreamWriter, types: &Types) -> Result<(), BlockTooLong> {
    w.enter_block(block::TYPE, 4);
    w.record(code::TYPE_NUMENTRY, &[types.count]);
    for (code, ops) in &types.records {
        w.record(*code, ops);
    }
    w.end_block()
}

/// The names of the sections globals and functions are in, in the order of first use.
pub(super) struct Sections<'m>(Vec<&'m str>);

impl<'m> Sections<'m> {
    /// Writes a record of each section `module` uses.
    pub(super) fn write(w: &mut BitstreamWriter, module: &'m Module) -> Sections<'m> {
        let mut sections: Vec<&str> = Vec::new();
        let sections_used = module
            .globals
            .iter()
            .map(|g| &g.section)
            .chain(module.functions.iter().map(|f| &f.section));
        for section in sections_used.flatten() {
            if !sections.contains(&section.as_str()) {
                sections.push(section);
                w.record(code::MODULE_SECTIONNAME, &chars(section));
            }
        }
        Sections(sections)
    }

    /// How many sections there are.
    pub(super) fn count(&self) -> usize {
        self.0.len()
    }

    /// The operand naming `section`: its index plus one, 0 for none.
    pub(super) fn operand(&self, section: &Option<String>) -> u64 {
        section.as_ref().map_or(0, |s| {
            self.0
                .iter()
                .position(|&t| t == s)
                .map_or(0, |i| i as u64 + 1)
        })
    }
}

/// The STRTAB block's names, one after the other.
#[derive(Default)]
struct StringTable {
    bytes: Vec<u8>,
}

impl StringTable {
    /// Adds `name`; its offset and size.
    fn add(&mut self, name: &str) -> [u64; 2] {
        let at = self.bytes.len() as u64;
        self.bytes.extend_from_slice(name.as_bytes());
        [at, name.len() as u64]
    }
}

/// The record of each global variable.
fn write_global_vars(
    w: &mut BitstreamWriter,
    values: &Values,
    sections: &Sections,
    strtab: &mut StringTable,
) {
    for g in &values.module.globals {
        let [offset, size] = strtab.add(&g.name);
        let init = g.init.as_ref().map_or(0, |c| values.constant(c) + 1);
        let mut record = vec![
            offset,
            size,
            values.types.ids[&g.ty],
            2 | u64::from(g.constant),
            init,
            linkage(g.linkage),
            align(g.align),
            sections.operand(&g.section),
            u64::from(g.hidden),
            0,
            u64::from(g.unnamed_addr),
            0,
            0,
            0,
            0,
            u64::from(g.dso_local()),
        ];
        if g.no_sanitize {
            // The partition (none: offset and size 0), then the sanitizer bits.
            record.extend([0, 0, SANITIZE_NO_ADDRESS | SANITIZE_NO_HWADDRESS]);
        }
        w.record(code::MODULE_GLOBALVAR, &record);
    }
}

/// The record of each function, declared or defined.
fn write_function_records(
    w: &mut BitstreamWriter,
    values: &Values,
    sections: &Sections,
    strtab: &mut StringTable,
) {
    for f in &values.module.functions {
        let [offset, size] = strtab.add(&f.name);
        let mut ops = vec![
            offset,
            size,
            values.types.ids[&f.ty()],
            0,
            u64::from(f.body.is_none()),
            linkage(f.linkage),
            0,
            0,
            sections.operand(&f.section),
        ];
        ops.extend([0; 8]);
        ops.extend([u64::from(f.linkage == Linkage::Internal), 0, 0, 0]);
        w.record(code::MODULE_FUNCTION, &ops);
    }
}

/// The module's constants block.
fn write_constants(w: &mut BitstreamWriter, values: &Values) -> Result<(), BlockTooLong> {
    w.enter_block(block::CONSTANTS, 4);
    let image = values
        .constant_list
        .iter()
        .any(|c| matches!(c, Const::Image { len, .. } if *len > 0))
        .then(|| w.define_blob_abbrev(code::CST_STRING));
    let mut current = None;
    for c in &values.constant_list {
        let ty = values.types.ids[&c.ty()];
        if current != Some(ty) {
            w.record(code::CST_SETTYPE, &[ty]);
            current = Some(ty);
        }
        match c {
            Const::Int(_, v) => w.record(code::CST_INTEGER, &[signed(*v)]),
            Const::Bytes(bytes) if bytes.iter().any(|&b| b != 0) => {
                let bytes: Vec<u64> = bytes.iter().map(|&b| u64::from(b)).collect();
                w.record(code::CST_STRING, &bytes);
            }
            Const::Image { index, len } if *len > 0 => {
                w.blob_hole(image.expect("an image abbreviation"), *index, *len)
            }
            Const::Null(_) | Const::Bytes(_) | Const::Image { .. } => w.record(code::CST_NULL, &[]),
            Const::Struct(_, items) | Const::Array(_, items) => {
                let ids: Vec<u64> = items.iter().map(|i| values.constant(i)).collect();
                w.record(code::CST_AGGREGATE, &ids);
            }
            Const::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let mut ops = vec![values.types.ids[source]];
                for operand in std::iter::once(&**base).chain(indices) {
                    ops.push(values.types.ids[&operand.ty()]);
                    ops.push(values.constant(operand));
                }
                let code = if *inbounds {
                    code::CST_CE_INBOUNDS_GEP
                } else {
                    code::CST_CE_GEP_OLD
                };
                w.record(code, &ops);
            }
            Const::Global(_) => unreachable!("globals are not in the constants block"),
        }
    }
    w.end_block()
}

/// Writes the instructions of one function body, numbering values relative to each
/// instruction as module version 2 does.
struct FunctionWriter<'a> {
    values: &'a Values<'a>,
    locals: HashMap<String, Type>,
    ids: HashMap<&'a str, u64>,
    blocks: HashMap<&'a str, u64>,
    /// The ID the next value-producing instruction gets.
    next: u64,
    ops: Vec<u64>,
}

impl FunctionWriter<'_> {
    fn id(&self, value: &Value) -> u64 {
        match value {
            Value::Const(c) => self.values.constant(c),
            Value::Local(name) => self.ids[name.as_str()],
        }
    }

    fn type_id(&self, value: &Value) -> u64 {
        let ty = crate::llvm::ir::module::value_type(value, &self.locals);
        self.values.types.ids[&ty]
    }

    /// Pushes `value` relative to the current instruction.
    fn value(&mut self, value: &Value) {
        let relative = (self.next as u32).wrapping_sub(self.id(value) as u32);
        self.ops.push(u64::from(relative));
    }

    /// Pushes `value`, and its type when it is defined later.
    fn value_and_type(&mut self, value: &Value) {
        self.value(value);
        if self.id(value) >= self.next {
            let ty = self.type_id(value);
            self.ops.push(ty);
        }
    }

    fn block(&mut self, name: &str) {
        self.ops.push(self.blocks[name]);
    }

    /// The code and operands of `op`.
    fn op(&mut self, op: &Op) -> u64 {
        self.ops.clear();
        match op {
            Op::Call { callee, args } => self.call(callee, args),
            Op::Store {
                value,
                ptr,
                align: a,
            } => {
                self.value_and_type(ptr);
                self.value_and_type(value);
                self.ops.extend([align(Some(*a)), 0]);
                code::INST_STORE
            }
            Op::Load { ty, ptr, align: a } => {
                self.value_and_type(ptr);
                self.ops
                    .extend([self.values.types.ids[ty], align(Some(*a)), 0]);
                code::INST_LOAD
            }
            Op::ICmp {
                predicate,
                lhs,
                rhs,
            } => {
                self.value_and_type(lhs);
                self.value(rhs);
                self.ops.push(match predicate {
                    Predicate::Eq => ICMP_EQ,
                    Predicate::Ne => ICMP_NE,
                });
                code::INST_CMP2
            }
            Op::Binary { op, lhs, rhs } => {
                self.value_and_type(lhs);
                self.value(rhs);
                self.ops.push(match op {
                    BinaryOp::And => BINOP_AND,
                    BinaryOp::LShr => BINOP_LSHR,
                });
                code::INST_BINOP
            }
            Op::Trunc { value, to } => {
                self.value_and_type(value);
                self.ops.extend([self.values.types.ids[to], CAST_TRUNC]);
                code::INST_CAST
            }
            Op::Gep {
                inbounds,
                source,
                base,
                indices,
            } => self.gep(*inbounds, source, base, indices),
            Op::Phi { ty, incoming } => self.phi(ty, incoming),
            Op::Br(to) => {
                self.block(to);
                code::INST_BR
            }
            Op::CondBr {
                cond,
                then,
                otherwise,
            } => {
                self.block(then);
                self.block(otherwise);
                self.value(cond);
                code::INST_BR
            }
            Op::Switch {
                value,
                default,
                cases,
            } => self.switch(value, default, cases),
            Op::RetVoid => code::INST_RET,
        }
    }

    /// The operands of a call of `callee` with `args`.
    fn call(&mut self, callee: &str, args: &[Value]) -> u64 {
        let f = self.values.module.function(callee);
        self.ops
            .extend([0, CALL_EXPLICIT_TYPE, self.values.types.ids[&f.ty()]]);
        self.value_and_type(&Value::Const(Const::Global(callee.to_string())));
        args.iter().for_each(|a| self.value(a));
        code::INST_CALL
    }

    /// The operands of a `getelementptr`.
    fn gep(&mut self, inbounds: bool, source: &Type, base: &Value, indices: &[Value]) -> u64 {
        let flags = if inbounds { GEP_INBOUNDS } else { 0 };
        self.ops.extend([flags, self.values.types.ids[source]]);
        self.value_and_type(base);
        indices.iter().for_each(|i| self.value_and_type(i));
        code::INST_GEP
    }

    /// The operands of a `phi` of type `ty`: each incoming value, signed, and its block.
    fn phi(&mut self, ty: &Type, incoming: &[(Value, String)]) -> u64 {
        self.ops.push(self.values.types.ids[ty]);
        for (value, block) in incoming {
            let relative = self.next as i64 - self.id(value) as i64;
            self.ops.push(signed(relative));
            self.block(block);
        }
        code::INST_PHI
    }

    /// The operands of a `switch` on `value`: its type, the default, then each case's
    /// constant and block.
    fn switch(&mut self, value: &Value, default: &str, cases: &[(i64, String)]) -> u64 {
        let ty = crate::llvm::ir::module::value_type(value, &self.locals);
        let Type::Int(bits) = ty else {
            unreachable!("a switch on an integer")
        };
        self.ops.push(self.values.types.ids[&ty]);
        self.value(value);
        self.block(default);
        for (case, block) in cases {
            self.ops
                .push(self.values.constant(&Const::Int(bits, *case)));
            self.block(block);
        }
        code::INST_SWITCH
    }
}

/// The function block of `function`, whose body is `body`.
fn write_function(
    w: &mut BitstreamWriter,
    values: &Values,
    function: &Function,
    body: &Body,
) -> Result<(), BlockTooLong> {
    let mut ids = HashMap::new();
    let mut next = values.count;
    for name in &body.params {
        ids.insert(name.as_str(), next);
        next += 1;
    }
    let first_inst = next;
    for inst in body.blocks.iter().flat_map(|b| &b.insts) {
        if let Some(name) = &inst.name {
            ids.insert(name.as_str(), next);
            next += 1;
        }
    }
    let blocks: HashMap<&str, u64> = body
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.as_str(), i as u64))
        .collect();
    let mut fw = FunctionWriter {
        values,
        locals: values.module.local_types(function),
        ids,
        blocks,
        next: first_inst,
        ops: Vec::new(),
    };
    w.enter_block(block::FUNCTION, 4);
    w.record(code::DECLAREBLOCKS, &[body.blocks.len() as u64]);
    for inst in body.blocks.iter().flat_map(|b| &b.insts) {
        let code = fw.op(&inst.op);
        w.record(code, &fw.ops);
        if inst.name.is_some() {
            fw.next += 1;
        }
    }
    w.enter_block(block::VALUE_SYMTAB, 4);
    let named = body.params.iter().chain(
        body.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter_map(|i| i.name.as_ref()),
    );
    for name in named.filter(|n| !crate::llvm::ir::module::is_unnamed(n)) {
        let mut ops = vec![fw.ids[name.as_str()]];
        ops.extend(chars(name));
        w.record(code::VST_ENTRY, &ops);
    }
    for (i, b) in body.blocks.iter().enumerate() {
        let mut ops = vec![i as u64];
        ops.extend(chars(&b.name));
        w.record(code::VST_BBENTRY, &ops);
    }
    w.end_block()?;
    w.end_block()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llvm::bitcode::writer::Part;
    use crate::ops::wrapper::offload::llvm_offload_wrapper_of;
    use crate::ops::wrapper::{Made, OffloadKind, Relocatable};
    use crate::target::processor::LlvmVersion;

    #[test]
    fn each_image_is_one_aligned_hole_of_its_length() {
        let made = Made {
            kind: OffloadKind::OpenMp,
            llvm: LlvmVersion::V23,
            relocatable: Relocatable::No,
        };
        let module = llvm_offload_wrapper_of(&made, "x86_64-pc-linux-gnu", &[5, 0, 8], &[]);
        let stream = write(&module).unwrap();
        let mut at = 0u64;
        let mut holes = Vec::new();
        for part in &stream.parts {
            match part {
                Part::Bytes(bytes) => at += bytes.len() as u64,
                Part::Hole { id, len } => {
                    holes.push((*id, *len, at % 4));
                    at += len;
                }
                Part::Elements(_) => unreachable!("blobs only"),
            }
        }
        // The empty image is a null constant, not a blob.
        assert_eq!(holes, [(0, 5, 0), (2, 8, 0)]);
        assert_eq!(stream.len() % 4, 0);
        let bytes = stream.to_bytes(|id| if id == 0 { b"hello" } else { b"12345678" });
        assert!(bytes.starts_with(b"BC\xc0\xde"));
        let hello = bytes.windows(8).position(|w| w == b"hello\0\0\0");
        assert!(hello.is_some_and(|at| at % 4 == 0), "{hello:?}");
    }
}
