//! The module information records: the triple, the section names, the source file name, the
//! GUIDs of the global values, one record per global variable and per function (names in the
//! string table), and the place of the value symbol table's offset.

use crate::llvm::bitcode::writer::{Abbrev, AbbrevOp, BitstreamWriter, Field, Placeholder};
use crate::llvm::ir::bitcode::Sections;
use crate::llvm::ir::module::{Global, Linkage};

use super::values::{bits_for, Numbering};
use super::{align, chars, code, linkage, StringEncoding, StringTable};

/// The bits of a global's sanitizer operand: `no_sanitize_address`, `no_sanitize_hwaddress`.
const NO_SANITIZE: u64 = 0b11;

/// Writes the module information; the place of the value symbol table's offset.
pub(super) fn write_module_info(
    w: &mut BitstreamWriter,
    numbering: &Numbering,
    strtab: &mut StringTable,
    guid: Option<super::Guid>,
    release: &super::Release,
) -> Placeholder {
    let module = numbering.module;
    w.record(code::MODULE_TRIPLE, &chars(&module.triple));
    let sections = Sections::write(w, module);
    let simple = (!module.globals.is_empty()).then(|| {
        let abbrev = simple_global_abbrev(numbering, sections.count());
        (w.define(&abbrev), abbrev)
    });
    let encoding = StringEncoding::of(module.id.as_bytes());
    let source = Abbrev(vec![
        AbbrevOp::Literal(code::MODULE_SOURCE_FILENAME),
        AbbrevOp::Array(encoding.field()),
    ]);
    let id = w.define(&source);
    let mut values = vec![code::MODULE_SOURCE_FILENAME];
    values.extend(module.id.bytes().map(|c| encoding.value(c)));
    w.abbreviated(id, &source, &values);
    if let Some(guid) = guid {
        write_guids(w, numbering, guid);
    }
    for g in &module.globals {
        write_global(w, numbering, &sections, strtab, simple.as_ref(), g);
    }
    for f in &module.functions {
        let [offset, size] = strtab.add(&f.name);
        let mut ops = vec![
            offset,
            size,
            numbering.types.id(&f.ty()),
            0,
            u64::from(f.body.is_none()),
            linkage(f.linkage),
            0,
            0,
            sections.operand(&f.section),
        ];
        ops.extend([0; 8]);
        let dso_local = f.linkage == Linkage::Internal;
        let [partition, _] = strtab.add("");
        ops.extend([u64::from(dso_local), 0, partition, 0, 0]);
        ops.truncate(release.function_operands);
        w.record(code::MODULE_FUNCTION, &ops);
    }
    let offset = Abbrev(vec![
        AbbrevOp::Literal(code::MODULE_VSTOFFSET),
        AbbrevOp::Scalar(Field::Fixed(32)),
    ]);
    let id = w.define(&offset);
    w.abbrev_id(id);
    w.placeholder()
}

/// The abbreviation of global variables with nothing but a type, flags, initializer,
/// linkage, alignment and section, sized for this module's.
fn simple_global_abbrev(numbering: &Numbering, sections: usize) -> Abbrev {
    let module = numbering.module;
    let max_type = module
        .globals
        .iter()
        .map(|g| numbering.types.id(&g.ty))
        .max()
        .unwrap_or_default();
    let max_align = module.globals.iter().map(|g| align(g.align)).max();
    let align_op = match max_align.unwrap_or_default() {
        0 => AbbrevOp::Literal(0),
        a => AbbrevOp::Scalar(Field::Fixed(bits_for(a + 1))),
    };
    let section_op = match sections {
        0 => AbbrevOp::Literal(0),
        n => AbbrevOp::Scalar(Field::Fixed(bits_for(n as u64 + 1))),
    };
    Abbrev(vec![
        AbbrevOp::Literal(code::MODULE_GLOBALVAR),
        AbbrevOp::Scalar(Field::Vbr(8)),
        AbbrevOp::Scalar(Field::Vbr(8)),
        AbbrevOp::Scalar(Field::Fixed(bits_for(max_type + 1))),
        AbbrevOp::Scalar(Field::Vbr(6)),
        AbbrevOp::Scalar(Field::Vbr(6)),
        AbbrevOp::Scalar(Field::Fixed(5)),
        align_op,
        section_op,
    ])
}

/// The GUID of every module-level value, its high half first: that of its name for a
/// declaration and for LLVM's own globals (`llvm.`), 0 for the other definitions (LLVM keeps
/// theirs elsewhere, when it has one) and for constants.
fn write_guids(w: &mut BitstreamWriter, numbering: &Numbering, guid: super::Guid) {
    let module = numbering.module;
    let names = module
        .globals
        .iter()
        .map(|g| (g.name.as_str(), g.init.is_none()));
    let names = names.chain(
        module
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.body.is_none())),
    );
    let mut values = vec![code::MODULE_GUIDLIST];
    for (name, declaration) in names {
        let id = if declaration || name.starts_with("llvm.") {
            // A leading \x01 (keep the name as it is) is no part of the identifier.
            guid(name.strip_prefix('\u{1}').unwrap_or(name).as_bytes())
        } else {
            0
        };
        values.extend([id >> 32, id & 0xffff_ffff]);
    }
    values.extend(std::iter::repeat_n(0, 2 * numbering.constants.len()));
    let abbrev = Abbrev(vec![
        AbbrevOp::Literal(code::MODULE_GUIDLIST),
        AbbrevOp::Array(Field::Fixed(32)),
    ]);
    let id = w.define(&abbrev);
    w.abbreviated(id, &abbrev, &values);
}

/// The record of the global variable `g`: abbreviated when it has nothing but the simple
/// abbreviation's operands.
fn write_global(
    w: &mut BitstreamWriter,
    numbering: &Numbering,
    sections: &Sections,
    strtab: &mut StringTable,
    simple: Option<&(u64, Abbrev)>,
    g: &Global,
) {
    let [offset, size] = strtab.add(&g.name);
    let init = g.init.as_ref().map_or(0, |c| {
        numbering.constant_ids.get(c).copied().unwrap_or_default() + 1
    });
    let mut record = vec![
        offset,
        size,
        numbering.types.id(&g.ty),
        2 | u64::from(g.constant),
        init,
        linkage(g.linkage),
        align(g.align),
        sections.operand(&g.section),
    ];
    let plain = !g.hidden && !g.unnamed_addr && !g.dso_local() && !g.no_sanitize;
    if let (true, Some((id, abbrev))) = (plain, simple) {
        let values = [vec![code::MODULE_GLOBALVAR], record].concat();
        return w.abbreviated(*id, abbrev, &values);
    }
    let [partition, _] = strtab.add("");
    record.extend([
        u64::from(g.hidden),
        0,
        u64::from(g.unnamed_addr),
        0,
        0,
        0,
        0,
        u64::from(g.dso_local()),
        partition,
        0,
        if g.no_sanitize { NO_SANITIZE } else { 0 },
        0,
    ]);
    w.record(code::MODULE_GLOBALVAR, &record);
}
