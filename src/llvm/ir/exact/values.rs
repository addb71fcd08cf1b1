//! The numbering of a module's types and values as LLVM's bitcode writer makes it: types in
//! the order they are first met (a type after the types it is made of), global variables and
//! functions in the module's order, then the module's constants sorted by type and by how
//! often they are used, the integers first; a function's arguments, its own constants
//! (sorted the same way) and its instructions after those.

use std::collections::{HashMap, HashSet};

use crate::llvm::ir::module::{value_type, Body, Const, Function, Module, Op, Type, Value};

/// A type of the type table: one of the module's, or one only the writer names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum TypeEntry {
    Of(Type),
    Metadata,
    Label,
}

/// The type table.
#[derive(Debug, Default)]
pub(super) struct Types {
    pub list: Vec<TypeEntry>,
    ids: HashMap<TypeEntry, u64>,
    visiting: HashSet<usize>,
}

/// The types `ty` is made of.
fn subtypes(module: &Module, ty: &Type) -> Vec<Type> {
    match ty {
        Type::Array(_, element) => vec![(**element).clone()],
        Type::Struct(fields) => fields.clone(),
        Type::Named(i) => module.structs[*i].fields.clone(),
        Type::Function(ret, params) => [vec![(**ret).clone()], params.clone()].concat(),
        Type::Void | Type::Int(_) | Type::Ptr => Vec::new(),
    }
}

impl Types {
    /// Adds `ty` after the types it is made of, unless it is there.
    pub fn add(&mut self, module: &Module, ty: &Type) {
        let key = TypeEntry::Of(ty.clone());
        if self.ids.contains_key(&key) {
            return;
        }
        // A named structure may refer to itself: it is written once its fields are.
        if let Type::Named(i) = ty {
            if !self.visiting.insert(*i) {
                return;
            }
        }
        for sub in subtypes(module, ty) {
            self.add(module, &sub);
        }
        self.add_entry(key);
    }

    /// Adds `entry` unless it is there.
    pub fn add_entry(&mut self, entry: TypeEntry) {
        if !self.ids.contains_key(&entry) {
            self.ids.insert(entry.clone(), self.list.len() as u64);
            self.list.push(entry);
        }
    }

    /// The ID of `ty`.
    pub fn id(&self, ty: &Type) -> u64 {
        self.entry_id(&TypeEntry::Of(ty.clone()))
    }

    /// The ID of `entry`.
    pub fn entry_id(&self, entry: &TypeEntry) -> u64 {
        self.ids.get(entry).copied().unwrap_or_default()
    }

    /// The bits a type ID takes in the fields the abbreviations give them.
    pub fn bits(&self) -> u32 {
        bits_for(self.list.len() as u64 + 1)
    }
}

/// The bits it takes to write the numbers below `n` (LLVM's `Log2_32_Ceil(n)`).
pub(super) fn bits_for(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Constants in the order they are met, each with the number of times it is used.
#[derive(Debug, Default)]
pub(super) struct Pool {
    list: Vec<(Const, u32)>,
    index: HashMap<Const, usize>,
}

impl Pool {
    /// Adds `c` after the constants it is made of, or counts one more use of it; constants
    /// of `outer` (the module's, for a function's pool) are not added.
    pub fn add(
        &mut self,
        module: &Module,
        types: &mut Types,
        c: &Const,
        outer: Option<&HashMap<Const, u64>>,
    ) {
        if matches!(c, Const::Global(_)) || outer.is_some_and(|o| o.contains_key(c)) {
            return;
        }
        if let Some(&i) = self.index.get(c) {
            if let Some(entry) = self.list.get_mut(i) {
                entry.1 += 1;
            }
            return;
        }
        types.add(module, &c.ty());
        match c {
            Const::Struct(_, items) | Const::Array(_, items) => {
                for item in items {
                    self.add(module, types, item, outer);
                }
            }
            Const::Gep {
                source,
                base,
                indices,
                ..
            } => {
                self.add(module, types, base, outer);
                for index in indices {
                    self.add(module, types, index, outer);
                }
                types.add(module, source);
            }
            _ => {}
        }
        self.index.insert(c.clone(), self.list.len());
        self.list.push((c.clone(), 1));
    }

    /// The constants in the order they are written: by type ID, the most used first, then
    /// the integers moved before the others, each group keeping its order.
    pub fn ordered(self, types: &Types) -> Vec<Const> {
        let mut list = self.list;
        list.sort_by_key(|(c, count)| (types.id(&c.ty()), std::cmp::Reverse(*count)));
        let (ints, others): (Vec<_>, Vec<_>) = list
            .into_iter()
            .partition(|(c, _)| matches!(c.ty(), Type::Int(_)));
        ints.into_iter().chain(others).map(|(c, _)| c).collect()
    }
}

/// An operand of an instruction, in the order LLVM keeps them.
pub(super) enum Operand<'a> {
    Value(&'a Value),
    /// A switch's case value, an integer of this many bits (the switch's value's).
    Case(u32, i64),
    Block,
}

/// The operands of `op`, in LLVM's order; `locals` gives the types of the function's values.
pub(super) fn operands<'a>(op: &'a Op, locals: &HashMap<String, Type>) -> Vec<Operand<'a>> {
    use Operand::{Block, Case, Value as V};
    match op {
        Op::Call { args, .. } => args.iter().map(V).collect(),
        Op::Store { value, ptr, .. } => vec![V(value), V(ptr)],
        Op::Load { ptr, .. } => vec![V(ptr)],
        Op::ICmp { lhs, rhs, .. } | Op::Binary { lhs, rhs, .. } => vec![V(lhs), V(rhs)],
        Op::Trunc { value, .. } => vec![V(value)],
        Op::Gep { base, indices, .. } => std::iter::once(base).chain(indices).map(V).collect(),
        Op::Phi { incoming, .. } => incoming.iter().map(|(v, _)| V(v)).collect(),
        Op::Br(_) => vec![Block],
        Op::CondBr { cond, .. } => vec![V(cond), Block, Block],
        Op::Switch { value, cases, .. } => {
            let bits = match value_type(value, locals) {
                Type::Int(bits) => bits,
                _ => 32,
            };
            let mut list = vec![V(value), Block];
            for (case, _) in cases {
                list.push(Case(bits, *case));
                list.push(Block);
            }
            list
        }
        Op::RetVoid => Vec::new(),
    }
}

/// The numbering of a module's types, global values and module-level constants.
pub(super) struct Numbering<'m> {
    pub module: &'m Module,
    pub types: Types,
    globals: HashMap<&'m str, u64>,
    /// Global variables and functions.
    pub global_count: u64,
    /// The module's constants, numbered from `global_count`.
    pub constants: Vec<Const>,
    pub constant_ids: HashMap<Const, u64>,
}

impl<'m> Numbering<'m> {
    /// The numbering of `module`.
    pub fn of(module: &'m Module) -> Numbering<'m> {
        let mut types = Types::default();
        for g in &module.globals {
            types.add(module, &Type::Ptr);
            types.add(module, &g.ty);
        }
        for f in &module.functions {
            types.add(module, &Type::Ptr);
            types.add(module, &f.ty());
        }
        let mut pool = Pool::default();
        for init in module.globals.iter().filter_map(|g| g.init.as_ref()) {
            pool.add(module, &mut types, init, None);
        }
        types.add_entry(TypeEntry::Metadata);
        for f in &module.functions {
            for p in &f.params {
                types.add(module, p);
            }
            if let Some(body) = &f.body {
                body_types(module, &mut types, f, body);
            }
        }
        let names = module.globals.iter().map(|g| g.name.as_str());
        let names = names.chain(module.functions.iter().map(|f| f.name.as_str()));
        let globals: HashMap<&str, u64> = names.zip(0..).collect();
        let global_count = globals.len() as u64;
        let constants = pool.ordered(&types);
        let constant_ids = constants.iter().cloned().zip(global_count..).collect();
        Numbering {
            module,
            types,
            globals,
            global_count,
            constants,
            constant_ids,
        }
    }

    /// The ID of the global variable or function `name`.
    pub fn global(&self, name: &str) -> u64 {
        self.globals.get(name).copied().unwrap_or_default()
    }

    /// The number of module-level values.
    pub fn count(&self) -> u64 {
        self.global_count + self.constants.len() as u64
    }
}

/// Adds the types `function`'s instructions use: their operands', source elements' and
/// results'.
fn body_types(module: &Module, types: &mut Types, function: &Function, body: &Body) {
    let locals = module.local_types(function);
    for inst in body.blocks.iter().flat_map(|b| &b.insts) {
        for operand in operands(&inst.op, &locals) {
            match operand {
                Operand::Value(v) => {
                    types.add(module, &value_type(v, &locals));
                    if let Value::Const(c) = v {
                        const_operand_types(module, types, c);
                    }
                }
                Operand::Case(bits, _) => types.add(module, &Type::Int(bits)),
                Operand::Block => types.add_entry(TypeEntry::Label),
            }
        }
        if let Op::Gep { source, .. } = &inst.op {
            types.add(module, source);
        }
        let result = match &inst.name {
            Some(name) => locals.get(name).cloned().unwrap_or(Type::Void),
            None => Type::Void,
        };
        types.add(module, &result);
    }
}

/// Adds the types of the operands of the constant `c`.
fn const_operand_types(module: &Module, types: &mut Types, c: &Const) {
    match c {
        Const::Struct(_, items) | Const::Array(_, items) => {
            for item in items {
                types.add(module, &item.ty());
                const_operand_types(module, types, item);
            }
        }
        Const::Gep {
            source,
            base,
            indices,
            ..
        } => {
            for operand in std::iter::once(&**base).chain(indices) {
                types.add(module, &operand.ty());
            }
            types.add(module, source);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llvm::ir::module::Module;

    #[test]
    fn constants_go_by_type_then_use_with_integers_first() {
        let module = Module {
            id: "m".into(),
            triple: "t".into(),
            structs: Vec::new(),
            globals: Vec::new(),
            functions: Vec::new(),
        };
        let mut types = Types::default();
        types.add(&module, &Type::Ptr);
        let mut pool = Pool::default();
        let pair = Const::Struct(
            Type::Struct(vec![Type::Ptr, Type::Int(32)]),
            vec![Const::Null(Type::Ptr), Const::Int(32, 7)],
        );
        for c in [
            Const::Int(64, 1),
            pair.clone(),
            Const::Int(32, 5),
            Const::Int(32, 7),
            Const::Int(32, 7),
        ] {
            pool.add(&module, &mut types, &c, None);
        }
        // i64 comes first among the types (it was met first), i32 7 is used three times.
        let ordered = pool.ordered(&types);
        assert_eq!(
            ordered,
            [
                Const::Int(64, 1),
                Const::Int(32, 7),
                Const::Int(32, 5),
                Const::Null(Type::Ptr),
                pair,
            ]
        );
        assert_eq!(bits_for(31), 5);
        assert_eq!(bits_for(32), 5);
        assert_eq!(bits_for(33), 6);
    }
}
