//! A small AArch64 assembler for the wrappers' registration functions: one method for each
//! instruction form the functions use (the mnemonic in its comment), labels for branches, and
//! ELF relocations for the symbols they name.

use object::elf;
use object::write::{Relocation, SymbolId};
use object::RelocationFlags;

use crate::codegen::labels::{Label, Labels};
use crate::codegen::layout::{Cfi, Function};

/// A 64-bit register number (`x0`..`x30`); 31 is `sp` or `xzr` by the instruction.
pub(crate) type X = u32;

/// The stack pointer, where an instruction takes it.
pub(crate) const SP: X = 31;
/// The frame pointer.
pub(crate) const FP: X = 29;
/// The link register.
pub(crate) const LR: X = 30;

/// A branch condition.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cond {
    Equal = 0,
    NotEqual = 1,
}

/// How a branch's displacement is encoded.
#[derive(Debug, Clone, Copy)]
enum Branch {
    /// 19 bits at bit 5 (`b.cond`, `cbz`).
    Imm19,
    /// 26 bits at bit 0 (`b`).
    Imm26,
}

/// Machine code being written, with its relocations (offsets from the code's start).
pub(crate) struct Asm {
    pub(crate) code: Vec<u8>,
    pub(crate) relocs: Vec<Relocation>,
    /// The branches' displacements, filled in by [`Asm::finish`].
    labels: Labels<Branch>,
    /// The prologue's call frame information; the prologue is the instructions before the
    /// first that is not one of its forms (stack allocation, register saves to the stack, the
    /// frame pointer's setup).
    cfi: Vec<(u32, Cfi)>,
    in_prologue: bool,
    /// How far the frame's start (the canonical frame address) is above the stack pointer.
    cfa: u32,
}

impl Default for Asm {
    fn default() -> Asm {
        Asm {
            code: Vec::new(),
            relocs: Vec::new(),
            labels: Labels::new(),
            cfi: Vec::new(),
            in_prologue: true,
            cfa: 0,
        }
    }
}

fn reloc(offset: usize, symbol: SymbolId, addend: i64, r_type: elf::RelocationType) -> Relocation {
    Relocation {
        offset: offset as u64,
        symbol,
        addend,
        flags: RelocationFlags::Elf { r_type },
    }
}

impl Asm {
    /// The function: the code with every branch resolved, and its relocations.
    pub(crate) fn finish(mut self) -> Function {
        for (at, form, distance) in self.labels.resolved() {
            let words = distance / 4;
            let mut word = u32::from_le_bytes(self.code[at..at + 4].try_into().expect("4 bytes"));
            word |= match form {
                Branch::Imm19 => (words as u32 & 0x7_ffff) << 5,
                Branch::Imm26 => words as u32 & 0x3ff_ffff,
            };
            self.code[at..at + 4].copy_from_slice(&word.to_le_bytes());
        }
        Function {
            code: self.code,
            relocs: self.relocs,
            cfi: self.cfi,
            unwind: None,
        }
    }

    /// A new label, bound later with [`Asm::bind`].
    pub(crate) fn label(&mut self) -> Label {
        self.labels.label()
    }

    /// Binds `label` here.
    pub(crate) fn bind(&mut self, label: Label) {
        self.labels.bind(label, self.code.len());
    }

    fn word(&mut self, word: u32) {
        self.in_prologue = false;
        self.code.extend_from_slice(&word.to_le_bytes());
    }

    /// Writes a prologue instruction (when the prologue has not ended) with what it does to the
    /// frame; other instructions go through [`Asm::word`].
    fn frame_word(&mut self, word: u32, effects: &[Cfi]) {
        let in_prologue = self.in_prologue;
        self.word(word);
        if in_prologue {
            self.in_prologue = true;
            let end = self.code.len() as u32;
            self.cfi.extend(effects.iter().map(|&effect| (end, effect)));
        }
    }

    /// Where `offset` from the stack pointer is, from the canonical frame address.
    fn cfa_relative(&self, offset: u32) -> i32 {
        offset as i32 - self.cfa as i32
    }

    fn branch(&mut self, word: u32, label: Label, form: Branch) {
        self.labels.branch(self.code.len(), label, form);
        self.word(word);
    }

    /// `stp xa, xb, [sp, #-bytes]!`
    pub(crate) fn push_pair(&mut self, a: X, b: X, bytes: u32) {
        let imm7 = (-(bytes as i32) / 8) as u32 & 0x7f;
        if self.in_prologue {
            self.cfa += bytes;
        }
        let effects = [
            Cfi::CfaOffset(self.cfa),
            Cfi::Saved(a as u8, self.cfa_relative(0)),
            Cfi::Saved(b as u8, self.cfa_relative(8)),
        ];
        self.frame_word(0xa980_0000 | imm7 << 15 | b << 10 | SP << 5 | a, &effects);
    }

    /// `ldp xa, xb, [sp], #bytes`
    pub(crate) fn pop_pair(&mut self, a: X, b: X, bytes: u32) {
        let imm7 = (bytes / 8) & 0x7f;
        self.word(0xa8c0_0000 | imm7 << 15 | b << 10 | SP << 5 | a);
    }

    /// `stp xa, xb, [base, #offset]`
    pub(crate) fn store_pair(&mut self, a: X, b: X, base: X, offset: u32) {
        let word = 0xa900_0000 | (offset / 8) << 15 | b << 10 | base << 5 | a;
        if base == SP {
            let effects = [
                Cfi::Saved(a as u8, self.cfa_relative(offset)),
                Cfi::Saved(b as u8, self.cfa_relative(offset + 8)),
            ];
            self.frame_word(word, &effects);
        } else {
            self.word(word);
        }
    }

    /// `ldp xa, xb, [base, #offset]`
    pub(crate) fn load_pair(&mut self, a: X, b: X, base: X, offset: u32) {
        self.word(0xa940_0000 | (offset / 8) << 15 | b << 10 | base << 5 | a);
    }

    /// `add xd, xn, #imm12` (`mov xd, sp` when `imm` is 0)
    pub(crate) fn add_imm(&mut self, d: X, n: X, imm: u32) {
        let word = 0x9100_0000 | imm << 10 | n << 5 | d;
        if d == FP && n == SP {
            // The frame pointer's setup: the frame is still described from the stack pointer.
            self.frame_word(word, &[]);
        } else {
            self.word(word);
        }
    }

    /// `sub xd, xn, #imm12`
    pub(crate) fn sub_imm(&mut self, d: X, n: X, imm: u32) {
        let word = 0xd100_0000 | imm << 10 | n << 5 | d;
        if d == SP && n == SP && self.in_prologue {
            self.cfa += imm;
            self.frame_word(word, &[Cfi::CfaOffset(self.cfa)]);
        } else {
            self.word(word);
        }
    }

    /// `mov xd, xm` (`orr xd, xzr, xm`)
    pub(crate) fn mov(&mut self, d: X, m: X) {
        self.word(0xaa00_03e0 | m << 16 | d);
    }

    /// `movz xd, #0`
    pub(crate) fn zero(&mut self, d: X) {
        self.word(0xd280_0000 | d);
    }

    /// `movn wd, #0` (`mov wd, #-1`)
    pub(crate) fn minus_one(&mut self, d: X) {
        self.word(0x1280_0000 | d);
    }

    /// `ldr xt, [xn, #offset]`
    pub(crate) fn load64(&mut self, t: X, n: X, offset: u32) {
        self.word(0xf940_0000 | (offset / 8) << 10 | n << 5 | t);
    }

    /// `ldr wt, [xn, #offset]`
    pub(crate) fn load32(&mut self, t: X, n: X, offset: u32) {
        self.word(0xb940_0000 | (offset / 4) << 10 | n << 5 | t);
    }

    /// `ldrh wt, [xn, #offset]`
    pub(crate) fn load16(&mut self, t: X, n: X, offset: u32) {
        self.word(0x7940_0000 | (offset / 2) << 10 | n << 5 | t);
    }

    /// `str xt, [xn, #offset]`
    pub(crate) fn store64(&mut self, t: X, n: X, offset: u32) {
        let word = 0xf900_0000 | (offset / 8) << 10 | n << 5 | t;
        if n == SP {
            self.frame_word(word, &[Cfi::Saved(t as u8, self.cfa_relative(offset))]);
        } else {
            self.word(word);
        }
    }

    /// `ubfx wd, wn, #lsb, #width`
    pub(crate) fn extract(&mut self, d: X, n: X, lsb: u32, width: u32) {
        self.word(0x5300_0000 | lsb << 16 | (lsb + width - 1) << 10 | n << 5 | d);
    }

    /// `cmp xn, xm`
    pub(crate) fn cmp(&mut self, n: X, m: X) {
        self.word(0xeb00_001f | m << 16 | n << 5);
    }

    /// `cmp wn, #imm12`
    pub(crate) fn cmp_imm(&mut self, n: X, imm: u32) {
        self.word(0x7100_001f | imm << 10 | n << 5);
    }

    /// `b.cond label`
    pub(crate) fn branch_if(&mut self, cond: Cond, label: Label) {
        self.branch(0x5400_0000 | cond as u32, label, Branch::Imm19);
    }

    /// `cbz xt, label`
    pub(crate) fn branch_if_zero(&mut self, t: X, label: Label) {
        self.branch(0xb400_0000 | t, label, Branch::Imm19);
    }

    /// `b label`
    pub(crate) fn jump(&mut self, label: Label) {
        self.branch(0x1400_0000, label, Branch::Imm26);
    }

    /// `adrp xd, symbol + addend` then `add xd, xd, :lo12:symbol + addend`
    pub(crate) fn address(&mut self, d: X, symbol: SymbolId, addend: i64) {
        let at = self.code.len();
        self.relocs
            .push(reloc(at, symbol, addend, elf::R_AARCH64_ADR_PREL_PG_HI21));
        self.word(0x9000_0000 | d); // adrp xd, symbol
        self.relocs.push(reloc(
            at + 4,
            symbol,
            addend,
            elf::R_AARCH64_ADD_ABS_LO12_NC,
        ));
        self.add_imm(d, d, 0); // add xd, xd, :lo12:symbol
    }

    /// `adrp scratch, symbol`, relocated for a load or store of `symbol`'s low 12 bits next.
    fn page_of(&mut self, scratch: X, symbol: SymbolId) {
        let at = self.code.len();
        self.relocs
            .push(reloc(at, symbol, 0, elf::R_AARCH64_ADR_PREL_PG_HI21));
        self.word(0x9000_0000 | scratch); // adrp scratch, symbol
        self.relocs
            .push(reloc(at + 4, symbol, 0, elf::R_AARCH64_LDST64_ABS_LO12_NC));
    }

    /// `adrp scratch, symbol` then `ldr xt, [scratch, :lo12:symbol]`
    pub(crate) fn load_from(&mut self, t: X, scratch: X, symbol: SymbolId) {
        self.page_of(scratch, symbol);
        self.load64(t, scratch, 0);
    }

    /// `adrp scratch, symbol` then `str xt, [scratch, :lo12:symbol]`
    pub(crate) fn store_to(&mut self, t: X, scratch: X, symbol: SymbolId) {
        self.page_of(scratch, symbol);
        self.store64(t, scratch, 0);
    }

    /// `adrp xd, :got:symbol` then `ldr xd, [xd, :got_lo12:symbol]`
    pub(crate) fn load_got(&mut self, d: X, symbol: SymbolId) {
        let at = self.code.len();
        self.relocs
            .push(reloc(at, symbol, 0, elf::R_AARCH64_ADR_GOT_PAGE));
        self.word(0x9000_0000 | d); // adrp xd, :got:symbol
        self.relocs
            .push(reloc(at + 4, symbol, 0, elf::R_AARCH64_LD64_GOT_LO12_NC));
        self.load64(d, d, 0); // ldr xd, [xd, :got_lo12:symbol]
    }

    /// `bl symbol`
    pub(crate) fn call(&mut self, symbol: SymbolId) {
        self.relocs
            .push(reloc(self.code.len(), symbol, 0, elf::R_AARCH64_CALL26));
        self.word(0x9400_0000);
    }

    /// `blr xn`
    pub(crate) fn call_reg(&mut self, n: X) {
        self.word(0xd63f_0000 | n << 5);
    }

    /// `ret`
    pub(crate) fn ret(&mut self) {
        self.word(0xd65f_03c0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(a: Asm) -> Vec<u32> {
        let code = a.finish().code;
        code.chunks(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn instructions_encode_as_the_manual_says() {
        let mut a = Asm::default();
        a.push_pair(FP, LR, 16);
        a.add_imm(FP, SP, 0);
        a.pop_pair(FP, LR, 16);
        a.store_pair(19, 20, SP, 16);
        a.load_pair(19, 20, SP, 16);
        a.mov(19, 0);
        a.load16(9, 19, 10);
        a.load32(9, 19, 12);
        a.load64(1, 19, 16);
        a.extract(4, 9, 3, 1);
        a.cmp(19, 20);
        a.cmp_imm(9, 4);
        a.minus_one(4);
        a.zero(5);
        a.store64(9, SP, 8);
        a.sub_imm(SP, SP, 16);
        a.call_reg(16);
        a.ret();
        assert_eq!(
            words(a),
            [
                0xa9bf7bfd, 0x910003fd, 0xa8c17bfd, 0xa90153f3, 0xa94153f3, 0xaa0003f3, 0x79401669,
                0xb9400e69, 0xf9400a61, 0x53030d24, 0xeb14027f, 0x7100113f, 0x12800004, 0xd2800005,
                0xf90007e9, 0xd10043ff, 0xd63f0200, 0xd65f03c0
            ]
        );
    }

    #[test]
    fn branches_reach_their_labels() {
        let mut a = Asm::default();
        let top = a.label();
        let end = a.label();
        a.bind(top);
        a.branch_if(Cond::NotEqual, end);
        a.branch_if_zero(16, end);
        a.jump(top);
        a.bind(end);
        a.ret();
        // b.ne +12; cbz x16, +8; b -8
        assert_eq!(words(a), [0x54000061, 0xb4000050, 0x17fffffe, 0xd65f03c0]);
    }
}
