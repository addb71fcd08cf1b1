//! A small model of the LLVM modules the wrapper writes, just what they use: types, globals
//! and their constant initializers (an image is one byte-array constant whose bytes are not
//! held), and functions made of a few instructions. It is printed as IR text here, and
//! written as bitcode by `crate::llvm::ir::bitcode`.

use std::collections::HashMap;
use std::fmt::Write as _;

/// A type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Void,
    /// An integer of this many bits.
    Int(u32),
    /// An opaque pointer of address space 0.
    Ptr,
    /// `[count x element]`.
    Array(u64, Box<Type>),
    /// A literal structure `{ fields }`.
    Struct(Vec<Type>),
    /// The named structure of this index in [`Module::structs`].
    Named(usize),
    /// A function type: the return type and the parameters'.
    Function(Box<Type>, Vec<Type>),
}

/// `iN`.
pub fn int(bits: u32) -> Type {
    Type::Int(bits)
}

/// `[count x i8]`.
pub fn bytes_type(count: u64) -> Type {
    Type::Array(count, Box::new(Type::Int(8)))
}

/// A named structure type: `%name = type { fields }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedStruct {
    pub name: String,
    pub fields: Vec<Type>,
}

/// A constant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Const {
    /// An integer of this many bits.
    Int(u32, i64),
    /// `null` or `zeroinitializer` of a type.
    Null(Type),
    /// `[n x i8] c"..."`.
    Bytes(Vec<u8>),
    /// The device image `index`, `len` bytes: `[len x i8] c"..."`.
    Image { index: usize, len: u64 },
    /// The address of a global variable or function.
    Global(String),
    /// A structure of the given (literal or named) type.
    Struct(Type, Vec<Const>),
    /// An array of the given element type.
    Array(Type, Vec<Const>),
    /// `getelementptr [inbounds] (source, ptr base, indices)`.
    Gep {
        inbounds: bool,
        source: Type,
        base: Box<Const>,
        indices: Vec<Const>,
    },
}

impl Const {
    /// The constant's type.
    pub fn ty(&self) -> Type {
        match self {
            Const::Int(bits, _) => Type::Int(*bits),
            Const::Null(ty) | Const::Struct(ty, _) => ty.clone(),
            Const::Bytes(bytes) => bytes_type(bytes.len() as u64),
            Const::Image { len, .. } => bytes_type(*len),
            Const::Global(_) | Const::Gep { .. } => Type::Ptr,
            Const::Array(element, items) => {
                Type::Array(items.len() as u64, Box::new(element.clone()))
            }
        }
    }
}

/// `ptr @name`.
pub fn global(name: &str) -> Const {
    Const::Global(name.to_string())
}

/// `null` of type `ptr`.
pub fn null() -> Const {
    Const::Null(Type::Ptr)
}

/// The linkage of a global variable or function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    External,
    Internal,
    Appending,
    ExternWeak,
    /// Defined here and maybe elsewhere, all definitions the same (COFF's section bounds).
    WeakOdr,
}

impl Linkage {
    fn is_local(self) -> bool {
        self == Linkage::Internal
    }
}

/// A global variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    pub name: String,
    /// The type of its value.
    pub ty: Type,
    pub linkage: Linkage,
    pub hidden: bool,
    pub unnamed_addr: bool,
    pub constant: bool,
    /// None for a declaration.
    pub init: Option<Const>,
    pub section: Option<String>,
    pub align: Option<u32>,
    /// Left out of AddressSanitizer's and HWAddressSanitizer's instrumentation
    /// (`no_sanitize_address, no_sanitize_hwaddress`).
    pub no_sanitize: bool,
}

impl Global {
    /// Whether the global is known to resolve within its linkage unit.
    pub fn dso_local(&self) -> bool {
        self.linkage.is_local() || self.hidden
    }
}

/// A value an instruction uses: a constant, or a parameter or instruction result by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Const(Const),
    Local(String),
}

/// `%name`.
pub fn local(name: &str) -> Value {
    Value::Local(name.to_string())
}

impl From<Const> for Value {
    fn from(c: Const) -> Value {
        Value::Const(c)
    }
}

/// `iN value`, as an instruction operand.
pub fn int_value(bits: u32, value: i64) -> Value {
    Value::Const(Const::Int(bits, value))
}

/// The integer comparisons used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predicate {
    Eq,
    Ne,
}

/// The binary operators used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    And,
    LShr,
}

/// An instruction's operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A call of a function of the module.
    Call {
        callee: String,
        args: Vec<Value>,
    },
    Store {
        value: Value,
        ptr: Value,
        align: u32,
    },
    Load {
        ty: Type,
        ptr: Value,
        align: u32,
    },
    ICmp {
        predicate: Predicate,
        lhs: Value,
        rhs: Value,
    },
    Binary {
        op: BinaryOp,
        lhs: Value,
        rhs: Value,
    },
    Trunc {
        value: Value,
        to: Type,
    },
    Gep {
        inbounds: bool,
        source: Type,
        base: Value,
        indices: Vec<Value>,
    },
    /// The incoming values and the blocks they come from, by name.
    Phi {
        ty: Type,
        incoming: Vec<(Value, String)>,
    },
    Br(String),
    CondBr {
        cond: Value,
        then: String,
        otherwise: String,
    },
    Switch {
        value: Value,
        default: String,
        cases: Vec<(i64, String)>,
    },
    RetVoid,
}

/// An instruction and the name of its result, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inst {
    pub name: Option<String>,
    pub op: Op,
}

/// A basic block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub name: String,
    pub insts: Vec<Inst>,
}

/// The body of a function: the names of its parameters, and its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub params: Vec<String>,
    pub blocks: Vec<Block>,
}

/// A function, declared or defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub ret: Type,
    pub params: Vec<Type>,
    pub linkage: Linkage,
    pub section: Option<String>,
    pub body: Option<Body>,
}

impl Function {
    /// A declaration of an external function.
    pub fn declare(name: &str, ret: Type, params: Vec<Type>) -> Function {
        Function {
            name: name.to_string(),
            ret,
            params,
            linkage: Linkage::External,
            section: None,
            body: None,
        }
    }

    /// The function's type.
    pub fn ty(&self) -> Type {
        Type::Function(Box::new(self.ret.clone()), self.params.clone())
    }
}

/// A module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// Its identifier, and source file name.
    pub id: String,
    pub triple: String,
    pub structs: Vec<NamedStruct>,
    pub globals: Vec<Global>,
    pub functions: Vec<Function>,
}

impl Module {
    /// The function named `name`.
    ///
    /// # Panics
    ///
    /// When there is none: the modules are built to call only their own functions.
    pub fn function(&self, name: &str) -> &Function {
        self.functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("the module declares @{name}"))
    }

    /// The types of the parameters and instruction results of `function`, by name.
    pub fn local_types(&self, function: &Function) -> HashMap<String, Type> {
        let mut types = HashMap::new();
        let Some(body) = &function.body else {
            return types;
        };
        for (name, ty) in body.params.iter().zip(&function.params) {
            types.insert(name.clone(), ty.clone());
        }
        for inst in body.blocks.iter().flat_map(|b| &b.insts) {
            if let Some(name) = &inst.name {
                let ty = self.result_type(&inst.op, &types);
                types.insert(name.clone(), ty);
            }
        }
        types
    }

    /// The type of the result of `op`, given the types of the values before it.
    fn result_type(&self, op: &Op, types: &HashMap<String, Type>) -> Type {
        match op {
            Op::Call { callee, .. } => self.function(callee).ret.clone(),
            Op::Load { ty, .. } | Op::Phi { ty, .. } => ty.clone(),
            Op::ICmp { .. } => Type::Int(1),
            Op::Binary { lhs, .. } => value_type(lhs, types),
            Op::Trunc { to, .. } => to.clone(),
            Op::Gep { .. } => Type::Ptr,
            _ => Type::Void,
        }
    }
}

/// The type of `value`, given the types of the locals.
pub fn value_type(value: &Value, types: &HashMap<String, Type>) -> Type {
    match value {
        Value::Const(c) => c.ty(),
        Value::Local(name) => types.get(name).cloned().unwrap_or(Type::Void),
    }
}

/// Whether `name` is a number: the value it names has no name, and IR prints its number.
pub fn is_unnamed(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

/// A name as IR writes it: quoted when it holds characters other than letters, digits, `_`,
/// `.` and `$`, or starts with a digit.
fn ir_name(name: &str) -> String {
    if is_unnamed(name) {
        return name.to_string();
    }
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain && !name.is_empty() {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

/// Appends `bytes` as an LLVM IR string constant `c"..."`.
fn push_bytes(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() + 3);
    out.push_str("c\"");
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:02X}");
        }
    }
    out.push('"');
}

/// Prints a module as IR text; `images` gives the bytes of each image.
struct Printer<'a> {
    module: &'a Module,
    images: &'a [&'a [u8]],
    out: String,
}

impl Printer<'_> {
    fn ty(&self, ty: &Type) -> String {
        match ty {
            Type::Void => "void".into(),
            Type::Int(bits) => format!("i{bits}"),
            Type::Ptr => "ptr".into(),
            Type::Array(n, element) => format!("[{n} x {}]", self.ty(element)),
            Type::Struct(fields) => self.fields(fields),
            Type::Named(i) => format!("%{}", ir_name(&self.module.structs[*i].name)),
            Type::Function(ret, params) => {
                let params: Vec<String> = params.iter().map(|p| self.ty(p)).collect();
                format!("{} ({})", self.ty(ret), params.join(", "))
            }
        }
    }

    fn fields(&self, fields: &[Type]) -> String {
        if fields.is_empty() {
            return "{}".into();
        }
        let fields: Vec<String> = fields.iter().map(|f| self.ty(f)).collect();
        format!("{{ {} }}", fields.join(", "))
    }

    /// Appends the constant `c` without its type.
    fn constant(&mut self, c: &Const) {
        match c {
            Const::Int(1, v) => self.out.push_str(if *v != 0 { "true" } else { "false" }),
            Const::Int(_, v) => {
                let _ = write!(self.out, "{v}");
            }
            Const::Null(Type::Ptr) => self.out.push_str("null"),
            Const::Null(_) => self.out.push_str("zeroinitializer"),
            Const::Bytes(bytes) => push_bytes(&mut self.out, bytes),
            Const::Image { index, .. } => push_bytes(&mut self.out, self.images[*index]),
            Const::Global(name) => {
                let _ = write!(self.out, "@{}", ir_name(name));
            }
            Const::Struct(_, items) if items.is_empty() => self.out.push_str("{}"),
            Const::Struct(_, items) => {
                self.out.push_str("{ ");
                self.typed_list(items);
                self.out.push_str(" }");
            }
            Const::Array(_, items) => {
                self.out.push('[');
                self.typed_list(items);
                self.out.push(']');
            }
            Const::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let _ = write!(
                    self.out,
                    "getelementptr {}({}, ",
                    if *inbounds { "inbounds " } else { "" },
                    self.ty(source)
                );
                self.typed_constant(base);
                for index in indices {
                    self.out.push_str(", ");
                    self.typed_constant(index);
                }
                self.out.push(')');
            }
        }
    }

    fn typed_constant(&mut self, c: &Const) {
        let ty = self.ty(&c.ty());
        self.out.push_str(&ty);
        self.out.push(' ');
        self.constant(c);
    }

    fn typed_list(&mut self, items: &[Const]) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.typed_constant(item);
        }
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::Const(c) => self.constant(c),
            Value::Local(name) => {
                let _ = write!(self.out, "%{}", ir_name(name));
            }
        }
    }

    fn typed_value(&mut self, value: &Value, types: &HashMap<String, Type>) {
        let ty = self.ty(&value_type(value, types));
        self.out.push_str(&ty);
        self.out.push(' ');
        self.value(value);
    }

    fn global(&mut self, g: &Global) {
        let _ = write!(self.out, "@{} = ", ir_name(&g.name));
        let linkage = match (g.linkage, g.init.is_some()) {
            (Linkage::Internal, _) => "internal ",
            (Linkage::Appending, _) => "appending ",
            (Linkage::ExternWeak, _) => "extern_weak ",
            (Linkage::WeakOdr, _) => "weak_odr ",
            (Linkage::External, false) => "external ",
            (Linkage::External, true) => "",
        };
        self.out.push_str(linkage);
        if g.hidden {
            self.out.push_str("hidden ");
        }
        if g.unnamed_addr {
            self.out.push_str("unnamed_addr ");
        }
        self.out
            .push_str(if g.constant { "constant " } else { "global " });
        match &g.init {
            Some(init) => self.typed_constant(init),
            None => {
                let ty = self.ty(&g.ty);
                self.out.push_str(&ty);
            }
        }
        if let Some(section) = &g.section {
            let _ = write!(self.out, ", section \"{section}\"");
        }
        if g.no_sanitize {
            self.out
                .push_str(", no_sanitize_address, no_sanitize_hwaddress");
        }
        if let Some(align) = g.align {
            let _ = write!(self.out, ", align {align}");
        }
        self.out.push('\n');
    }

    fn function(&mut self, f: &Function) {
        let linkage = match f.linkage {
            Linkage::Internal => "internal ",
            Linkage::ExternWeak => "extern_weak ",
            Linkage::WeakOdr => "weak_odr ",
            Linkage::External | Linkage::Appending => "",
        };
        let Some(body) = &f.body else {
            let params: Vec<String> = f.params.iter().map(|p| self.ty(p)).collect();
            let _ = writeln!(
                self.out,
                "declare {linkage}{} @{}({})",
                self.ty(&f.ret),
                ir_name(&f.name),
                params.join(", ")
            );
            return;
        };
        let params: Vec<String> = f
            .params
            .iter()
            .zip(&body.params)
            .map(|(ty, name)| format!("{} %{}", self.ty(ty), ir_name(name)))
            .collect();
        let _ = write!(
            self.out,
            "\ndefine {linkage}{} @{}({})",
            self.ty(&f.ret),
            ir_name(&f.name),
            params.join(", ")
        );
        if let Some(section) = &f.section {
            let _ = write!(self.out, " section \"{section}\"");
        }
        self.out.push_str(" {\n");
        let types = self.module.local_types(f);
        for (i, block) in body.blocks.iter().enumerate() {
            if i > 0 {
                self.out.push('\n');
            }
            let _ = writeln!(self.out, "{}:", ir_name(&block.name));
            for inst in &block.insts {
                self.out.push_str("  ");
                if let Some(name) = &inst.name {
                    let _ = write!(self.out, "%{} = ", ir_name(name));
                }
                self.op(&inst.op, &types);
                self.out.push('\n');
            }
        }
        self.out.push_str("}\n");
    }

    fn label(&mut self, block: &str) {
        let _ = write!(self.out, "label %{}", ir_name(block));
    }

    fn op(&mut self, op: &Op, types: &HashMap<String, Type>) {
        match op {
            Op::Call { callee, args } => self.call(callee, args, types),
            Op::Store { value, ptr, align } => {
                self.out.push_str("store ");
                self.typed_value(value, types);
                self.out.push_str(", ");
                self.typed_value(ptr, types);
                let _ = write!(self.out, ", align {align}");
            }
            Op::Load { ty, ptr, align } => {
                let _ = write!(self.out, "load {}, ", self.ty(ty));
                self.typed_value(ptr, types);
                let _ = write!(self.out, ", align {align}");
            }
            Op::ICmp {
                predicate,
                lhs,
                rhs,
            } => {
                let p = match predicate {
                    Predicate::Eq => "eq",
                    Predicate::Ne => "ne",
                };
                let _ = write!(self.out, "icmp {p} ");
                self.typed_value(lhs, types);
                self.out.push_str(", ");
                self.value(rhs);
            }
            Op::Binary { op, lhs, rhs } => {
                let name = match op {
                    BinaryOp::And => "and",
                    BinaryOp::LShr => "lshr",
                };
                let _ = write!(self.out, "{name} ");
                self.typed_value(lhs, types);
                self.out.push_str(", ");
                self.value(rhs);
            }
            Op::Trunc { value, to } => {
                self.out.push_str("trunc ");
                self.typed_value(value, types);
                let _ = write!(self.out, " to {}", self.ty(to));
            }
            Op::Gep {
                inbounds,
                source,
                base,
                indices,
            } => self.gep(*inbounds, source, base, indices, types),
            Op::Phi { ty, incoming } => self.phi(ty, incoming),
            Op::Br(block) => {
                self.out.push_str("br ");
                self.label(block);
            }
            Op::CondBr {
                cond,
                then,
                otherwise,
            } => {
                self.out.push_str("br ");
                self.typed_value(cond, types);
                self.out.push_str(", ");
                self.label(then);
                self.out.push_str(", ");
                self.label(otherwise);
            }
            Op::Switch {
                value,
                default,
                cases,
            } => self.switch(value, default, cases, types),
            Op::RetVoid => self.out.push_str("ret void"),
        }
    }

    /// `call ret @callee(args)`.
    fn call(&mut self, callee: &str, args: &[Value], types: &HashMap<String, Type>) {
        let f = self.module.function(callee);
        let _ = write!(self.out, "call {} @{}(", self.ty(&f.ret), ir_name(callee));
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.typed_value(arg, types);
        }
        self.out.push(')');
    }

    /// `getelementptr [inbounds] source, base, indices`.
    fn gep(
        &mut self,
        inbounds: bool,
        source: &Type,
        base: &Value,
        indices: &[Value],
        types: &HashMap<String, Type>,
    ) {
        let _ = write!(
            self.out,
            "getelementptr {}{}, ",
            if inbounds { "inbounds " } else { "" },
            self.ty(source)
        );
        self.typed_value(base, types);
        for index in indices {
            self.out.push_str(", ");
            self.typed_value(index, types);
        }
    }

    /// `phi ty [ value, %block ], ...`.
    fn phi(&mut self, ty: &Type, incoming: &[(Value, String)]) {
        let _ = write!(self.out, "phi {} ", self.ty(ty));
        for (i, (value, block)) in incoming.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.out.push_str("[ ");
            self.value(value);
            let _ = write!(self.out, ", %{} ]", ir_name(block));
        }
    }

    /// `switch value, label %default [ cases ]`, one case a line.
    fn switch(
        &mut self,
        value: &Value,
        default: &str,
        cases: &[(i64, String)],
        types: &HashMap<String, Type>,
    ) {
        let ty = self.ty(&value_type(value, types));
        self.out.push_str("switch ");
        self.typed_value(value, types);
        self.out.push_str(", ");
        self.label(default);
        self.out.push_str(" [\n");
        for (case, block) in cases {
            let _ = write!(self.out, "    {ty} {case}, ");
            self.label(block);
            self.out.push('\n');
        }
        self.out.push_str("  ]");
    }
}

impl Module {
    /// The module as LLVM IR text; `images` gives the bytes of each image it holds.
    pub fn to_ir(&self, images: &[&[u8]]) -> String {
        let mut p = Printer {
            module: self,
            images,
            out: String::with_capacity(
                4096 + images.iter().map(|i| i.len() * 3 / 2).sum::<usize>(),
            ),
        };
        let _ = writeln!(p.out, "; ModuleID = '{}'", self.id);
        let _ = writeln!(p.out, "source_filename = \"{}\"", self.id);
        let _ = writeln!(p.out, "target triple = \"{}\"\n", self.triple);
        for s in &self.structs {
            let fields = p.fields(&s.fields);
            let _ = writeln!(p.out, "%{} = type {fields}", ir_name(&s.name));
        }
        p.out.push('\n');
        for g in &self.globals {
            p.global(g);
        }
        p.out.push('\n');
        for f in &self.functions {
            p.function(f);
        }
        p.out
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::wrapper::ir::clang_offload_wrapper;

    #[test]
    fn images_and_names_print_as_llvm_writes_them() {
        let module = clang_offload_wrapper("x86_64-pc-linux-gnu", &[4], &["gfx90a:xnack+"]);
        let text = module.to_ir(&[b"a\"\\\n"]);
        for line in [
            "source_filename = \"offload.wrapper.object\"",
            "@.omp_offloading.device_image = internal unnamed_addr constant [4 x i8] c\"a\\22\\5C\\0A\", align 8",
            "@__offload_arch = internal unnamed_addr constant [14 x i8] c\"gfx90a:xnack+\\00\", section \".offload_arch_list\"",
            "@__dummy.omp_offloading.entry = hidden constant [0 x %__tgt_offload_entry] zeroinitializer, section \"omp_offloading_entries\"",
            "declare extern_weak void @__tgt_register_image_info(ptr)",
            "  %has_info = icmp ne ptr @__tgt_register_image_info, null",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
    }
}
