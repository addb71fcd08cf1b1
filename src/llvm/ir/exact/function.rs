//! A function body as LLVM's bitcode writer writes it: its block count, its own constants,
//! its instructions with the abbreviations LLVM picks (none when an operand is defined
//! later), and the names of its values and blocks in the order of LLVM's symbol table.

use std::collections::HashMap;

use crate::llvm::adt::string_map::{Probing, StringMap};
use crate::llvm::bitcode::reader::block_id;
use crate::llvm::bitcode::writer::{BitstreamWriter, BlockTooLong};
use crate::llvm::ir::module::{
    is_unnamed, value_type, BinaryOp, Body, Const, Function, Op, Predicate, Type, Value,
};

use super::tables::abbrev;
use super::values::{operands, Numbering, Operand, Pool};
use super::{code, write_constants, Abbrevs, StringEncoding};

/// The bit of a call's calling-convention operand saying the function type follows.
const CALL_EXPLICIT_TYPE: u64 = 1 << 15;

/// A GEP's flags for `inbounds`: in bounds, and no unsigned-signed wrap.
const GEP_INBOUNDS: u64 = 0b11;

/// The function being written: the IDs of its values and blocks.
struct Writing<'a> {
    numbering: &'a Numbering<'a>,
    locals: HashMap<String, Type>,
    ids: HashMap<&'a str, u64>,
    constants: HashMap<Const, u64>,
    blocks: HashMap<&'a str, u64>,
    /// The ID of the instruction being written.
    next: u64,
    ops: Vec<u64>,
    /// Whether an operand is defined after the instruction.
    forward: bool,
}

impl Writing<'_> {
    fn id(&self, value: &Value) -> u64 {
        match value {
            Value::Const(Const::Global(name)) => self.numbering.global(name),
            Value::Const(c) => self.constant(c),
            Value::Local(name) => self.ids.get(name.as_str()).copied().unwrap_or_default(),
        }
    }

    fn constant(&self, c: &Const) -> u64 {
        let own = self.constants.get(c);
        own.or_else(|| self.numbering.constant_ids.get(c))
            .copied()
            .unwrap_or_default()
    }

    fn type_id(&self, ty: &Type) -> u64 {
        self.numbering.types.id(ty)
    }

    /// `value` relative to the instruction, as a 32-bit number.
    fn value(&mut self, value: &Value) {
        let relative = (self.next as u32).wrapping_sub(self.id(value) as u32);
        self.ops.push(u64::from(relative));
    }

    /// `value`, and its type when it is defined later.
    fn value_and_type(&mut self, value: &Value) {
        self.value(value);
        if self.id(value) >= self.next {
            self.forward = true;
            let ty = value_type(value, &self.locals);
            self.ops.push(self.type_id(&ty));
        }
    }

    fn block(&mut self, name: &str) {
        let id = self.blocks.get(name).copied().unwrap_or_default();
        self.ops.push(id);
    }

    /// The code, operands and abbreviation of `op`.
    fn op(&mut self, op: &Op) -> (u64, Option<u64>) {
        self.ops.clear();
        self.forward = false;
        let (code, abbrev) = match op {
            Op::Call { callee, args } => self.call(callee, args),
            Op::Store { value, ptr, align } => {
                self.value_and_type(ptr);
                self.value_and_type(value);
                self.ops.extend([encoded_align(*align), 0]);
                (code::INST_STORE, Some(abbrev::STORE))
            }
            Op::Load { ty, ptr, align } => {
                self.value_and_type(ptr);
                self.ops
                    .extend([self.type_id(ty), encoded_align(*align), 0]);
                (code::INST_LOAD, Some(abbrev::LOAD))
            }
            Op::ICmp {
                predicate,
                lhs,
                rhs,
            } => {
                self.value_and_type(lhs);
                self.value(rhs);
                self.ops.push(match predicate {
                    Predicate::Eq => 32,
                    Predicate::Ne => 33,
                });
                (code::INST_CMP2, Some(abbrev::CMP))
            }
            Op::Binary { op, lhs, rhs } => {
                self.value_and_type(lhs);
                self.value(rhs);
                self.ops.push(match op {
                    BinaryOp::LShr => 8,
                    BinaryOp::And => 10,
                });
                (code::INST_BINOP, Some(abbrev::BINOP))
            }
            Op::Trunc { value, to } => {
                self.value_and_type(value);
                self.ops.extend([self.type_id(to), 0]);
                (code::INST_CAST, Some(abbrev::CAST))
            }
            Op::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let flags = if *inbounds { GEP_INBOUNDS } else { 0 };
                self.ops.extend([flags, self.type_id(source)]);
                self.value_and_type(base);
                indices.iter().for_each(|i| self.value_and_type(i));
                (code::INST_GEP, Some(abbrev::GEP))
            }
            Op::Phi { ty, incoming } => {
                self.ops.push(self.type_id(ty));
                for (value, block) in incoming {
                    let relative = self.next as i64 - self.id(value) as i64;
                    self.ops.push(super::signed(relative));
                    self.block(block);
                }
                (code::INST_PHI, None)
            }
            Op::Br(to) => {
                self.block(to);
                (code::INST_BR, Some(abbrev::BR_UNCOND))
            }
            Op::CondBr {
                cond,
                then,
                otherwise,
            } => {
                self.block(then);
                self.block(otherwise);
                self.value(cond);
                (code::INST_BR, Some(abbrev::BR_COND))
            }
            Op::Switch {
                value,
                default,
                cases,
            } => self.switch(value, default, cases),
            Op::RetVoid => (code::INST_RET, Some(abbrev::RET_VOID)),
        };
        (code, abbrev.filter(|_| !self.forward))
    }

    /// A call of `callee` with `args`: no attributes, the C calling convention.
    fn call(&mut self, callee: &str, args: &[Value]) -> (u64, Option<u64>) {
        let f = self.numbering.module.function(callee);
        let ty = self.type_id(&f.ty());
        self.ops.extend([0, CALL_EXPLICIT_TYPE, ty]);
        self.value_and_type(&Value::Const(Const::Global(callee.to_string())));
        args.iter().for_each(|a| self.value(a));
        (code::INST_CALL, None)
    }

    /// A switch on `value`: its type, the default, then each case's constant and block.
    fn switch(
        &mut self,
        value: &Value,
        default: &str,
        cases: &[(i64, String)],
    ) -> (u64, Option<u64>) {
        let ty = value_type(value, &self.locals);
        let bits = match ty {
            Type::Int(bits) => bits,
            _ => 32,
        };
        self.ops.push(self.type_id(&ty));
        self.value(value);
        self.block(default);
        for (case, block) in cases {
            self.ops.push(self.constant(&Const::Int(bits, *case)));
            self.block(block);
        }
        (code::INST_SWITCH, None)
    }
}

/// An alignment as bitcode holds it: its log2 plus one.
fn encoded_align(bytes: u32) -> u64 {
    u64::from(bytes.trailing_zeros()) + 1
}

/// The constants `body` uses that the module does not have, in the order they are written.
fn own_constants(numbering: &Numbering, function: &Function, body: &Body) -> Vec<Const> {
    let module = numbering.module;
    let locals = module.local_types(function);
    let mut types = super::values::Types::default();
    let mut pool = Pool::default();
    let outer = Some(&numbering.constant_ids);
    for inst in body.blocks.iter().flat_map(|b| &b.insts) {
        for operand in operands(&inst.op, &locals) {
            match operand {
                Operand::Value(Value::Const(c)) => pool.add(module, &mut types, c, outer),
                Operand::Case(bits, case) => {
                    pool.add(module, &mut types, &Const::Int(bits, case), outer)
                }
                _ => {}
            }
        }
    }
    pool.ordered(&numbering.types)
}

/// Writes the block of `function`, whose body is `body`.
pub(super) fn write(
    w: &mut BitstreamWriter,
    numbering: &Numbering,
    abbrevs: &Abbrevs,
    function: &Function,
    body: &Body,
    release: &super::Release,
) -> Result<(), BlockTooLong> {
    let mut next = numbering.count();
    let mut ids = HashMap::new();
    for name in &body.params {
        ids.insert(name.as_str(), next);
        next += 1;
    }
    let constants = own_constants(numbering, function, body);
    let constant_ids: HashMap<Const, u64> = constants.iter().cloned().zip(next..).collect();
    let first_constant = next;
    next += constants.len() as u64;
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
        .map(|b| b.name.as_str())
        .zip(0..)
        .collect();
    w.enter_block(block_id::FUNCTION, 5);
    w.record(code::DECLAREBLOCKS, &[body.blocks.len() as u64]);
    if !constants.is_empty() {
        write_constants(w, numbering, abbrevs, &constants, first_constant, None)?;
    }
    let mut fw = Writing {
        numbering,
        locals: numbering.module.local_types(function),
        ids,
        constants: constant_ids,
        blocks,
        next: first_inst,
        ops: Vec::new(),
        forward: false,
    };
    for inst in body.blocks.iter().flat_map(|b| &b.insts) {
        let (code, abbrev) = fw.op(&inst.op);
        match abbrev {
            Some(id) => {
                let values = [vec![code], fw.ops.clone()].concat();
                w.abbreviated(id, abbrevs.function(id), &values);
            }
            None => w.record(code, &fw.ops),
        }
        if inst.name.is_some() {
            fw.next += 1;
        }
    }
    write_symbol_table(w, abbrevs, &fw, body, release)?;
    w.end_block()
}

/// The function's value symbol table: its named arguments, blocks and instructions, in the
/// order the release's `StringMap` of them iterates after they were added in that order.
fn write_symbol_table(
    w: &mut BitstreamWriter,
    abbrevs: &Abbrevs,
    fw: &Writing,
    body: &Body,
    release: &super::Release,
) -> Result<(), BlockTooLong> {
    // What a name is: an argument or instruction (its value ID) or a block (its index).
    let id = |name: &String| fw.ids.get(name.as_str()).copied().unwrap_or_default();
    let mut added: Vec<(&[u8], (bool, u64))> = Vec::new();
    for name in body.params.iter().filter(|n| !is_unnamed(n)) {
        added.push((name.as_bytes(), (false, id(name))));
    }
    for (i, b) in body.blocks.iter().enumerate() {
        added.push((b.name.as_bytes(), (true, i as u64)));
    }
    let named = body
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.name.as_ref());
    for name in named.filter(|n| !is_unnamed(n)) {
        added.push((name.as_bytes(), (false, id(name))));
    }
    if added.is_empty() {
        return Ok(());
    }
    let probing = if release.linear_probing {
        Probing::Linear
    } else {
        Probing::Quadratic
    };
    let mut table = StringMap::with_probing(probing);
    for (name, what) in added {
        table.insert(name, what);
    }
    let order: Vec<(Vec<u8>, (bool, u64))> = table.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
    w.enter_block(block_id::VALUE_SYMTAB, 4);
    for (name, (is_block, id)) in order {
        let encoding = StringEncoding::of(&name);
        let (code, abbrev) = match (is_block, encoding) {
            (true, StringEncoding::Char6) => (code::VST_BBENTRY, abbrev::VST_BBENTRY_6),
            (true, _) => (code::VST_BBENTRY, abbrev::VST_ENTRY_8),
            (false, StringEncoding::Char6) => (code::VST_ENTRY, abbrev::VST_ENTRY_6),
            (false, StringEncoding::Fixed7) => (code::VST_ENTRY, abbrev::VST_ENTRY_7),
            (false, StringEncoding::Fixed8) => (code::VST_ENTRY, abbrev::VST_ENTRY_8),
        };
        let mut values = vec![code, id];
        values.extend(name.iter().map(|&c| encoding.value(c)));
        w.abbreviated(abbrev, abbrevs.vst(abbrev), &values);
    }
    w.end_block()
}
