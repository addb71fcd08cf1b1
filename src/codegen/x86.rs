//! A small x86-64 assembler for the wrappers' registration functions: one method for each
//! instruction form the functions use (the mnemonic in its comment), labels for branches, and
//! relocations for the symbols they name, for ELF or COFF objects.

use object::write::{Relocation, SymbolId};
use object::RelocationFlags;

pub(crate) use crate::codegen::labels::Label;
use crate::codegen::labels::Labels;
use crate::codegen::layout::{Cfi, Function, Host};

/// A general-purpose register, numbered as the encoding numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Reg {
    Rax = 0,
    Rcx,
    Rdx,
    Rbx,
    Rsp,
    Rbp,
    Rsi,
    Rdi,
    R8,
    R9,
    R10,
    R11,
    R12,
    R13,
    R14,
    R15,
}

impl Reg {
    fn low(self) -> u8 {
        self as u8 & 7
    }

    fn high(self) -> bool {
        self as u8 >= 8
    }

    /// The register's DWARF number.
    fn dwarf(self) -> u8 {
        match self {
            Reg::Rax => 0,
            Reg::Rdx => 1,
            Reg::Rcx => 2,
            Reg::Rbx => 3,
            Reg::Rsi => 4,
            Reg::Rdi => 5,
            Reg::Rbp => 6,
            Reg::Rsp => 7,
            other => other as u8,
        }
    }
}

/// A branch condition (the low nibble of `Jcc`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cond {
    Equal = 0x4,
    NotEqual = 0x5,
}

/// The object format, which chooses the relocation types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Elf,
    Coff,
}

impl Format {
    /// A 32-bit PC-relative data reference.
    fn pc32(self) -> RelocationFlags {
        match self {
            Format::Elf => RelocationFlags::Elf {
                r_type: object::elf::R_X86_64_PC32,
            },
            Format::Coff => RelocationFlags::Coff {
                typ: object::pe::IMAGE_REL_AMD64_REL32,
            },
        }
    }

    /// A 32-bit PC-relative call (through the PLT where there is one).
    fn call32(self) -> RelocationFlags {
        match self {
            Format::Elf => RelocationFlags::Elf {
                r_type: object::elf::R_X86_64_PLT32,
            },
            Format::Coff => RelocationFlags::Coff {
                typ: object::pe::IMAGE_REL_AMD64_REL32,
            },
        }
    }
}

/// A calling convention: where a function's integer and pointer arguments go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conv {
    /// System V (ELF): six registers, then the stack.
    SysV,
    /// Microsoft x64 (COFF): four registers, then the stack after 32 bytes of shadow space the
    /// caller reserves.
    Win64,
}

impl Conv {
    /// The registers of the first arguments.
    pub(crate) fn registers(self) -> &'static [Reg] {
        match self {
            Conv::SysV => &[Reg::Rdi, Reg::Rsi, Reg::Rdx, Reg::Rcx, Reg::R8, Reg::R9],
            Conv::Win64 => &[Reg::Rcx, Reg::Rdx, Reg::R8, Reg::R9],
        }
    }

    /// The first argument's register.
    pub(crate) fn first(self) -> Reg {
        self.registers()[0]
    }

    /// The bytes below the stack arguments that the caller reserves for the callee.
    pub(crate) fn shadow(self) -> i8 {
        match self {
            Conv::SysV => 0,
            Conv::Win64 => 32,
        }
    }

    /// Where argument `index` (one past the registers or later) goes, from `rsp` at the call.
    pub(crate) fn stack_slot(self, index: usize) -> i8 {
        let beyond = index - self.registers().len();
        self.shadow() + 8 * beyond as i8
    }
}

/// Machine code being written, with its relocations (offsets from the code's start).
pub(crate) struct Asm {
    pub(crate) code: Vec<u8>,
    pub(crate) relocs: Vec<Relocation>,
    format: Format,
    /// The branches' 32-bit displacements, filled in by [`Asm::finish`].
    labels: Labels<()>,
    /// The prologue's Windows unwind codes: where each instruction ends, the operation and its
    /// operand (`push` and `sub rsp` only appear in prologues here).
    unwind_codes: Vec<(u8, UnwindOp, u8)>,
    /// The same as call frame information, and how far the frame's start (the canonical frame
    /// address) is above the stack pointer.
    cfi: Vec<(u32, Cfi)>,
    cfa: u32,
}

/// A Windows x64 unwind operation.
#[derive(Debug, Clone, Copy)]
enum UnwindOp {
    /// `UWOP_PUSH_NONVOL`: a register pushed.
    PushNonvolatile = 0,
    /// `UWOP_ALLOC_SMALL`: 8 to 128 bytes of stack allocated.
    AllocSmall = 2,
}

impl Asm {
    pub(crate) fn new(format: Format) -> Asm {
        Asm {
            code: Vec::new(),
            relocs: Vec::new(),
            format,
            labels: Labels::new(),
            unwind_codes: Vec::new(),
            cfi: Vec::new(),
            // The return address is pushed.
            cfa: 8,
        }
    }

    /// The function: the code with every branch resolved, its relocations, and its unwind
    /// information.
    pub(crate) fn finish(mut self) -> Function {
        for (at, (), distance) in self.labels.resolved() {
            // From the end of the displacement.
            let displacement = i32::try_from(distance - 4).expect("a function is small");
            self.code[at..at + 4].copy_from_slice(&displacement.to_le_bytes());
        }
        let unwind = Some(self.unwind_info());
        Function {
            code: self.code,
            relocs: self.relocs,
            cfi: self.cfi,
            unwind,
        }
    }

    /// The `UNWIND_INFO` of the function: version 1, no flags, the prologue's size, its
    /// codes from the last instruction back, no frame register; the codes padded to an even
    /// count.
    fn unwind_info(&self) -> Vec<u8> {
        let prologue = self.unwind_codes.last().map_or(0, |&(end, _, _)| end);
        let count = self.unwind_codes.len() as u8;
        let mut info = vec![1, prologue, count, 0];
        for &(end, op, operand) in self.unwind_codes.iter().rev() {
            info.extend([end, op as u8 | operand << 4]);
        }
        if count % 2 == 1 {
            info.extend([0, 0]);
        }
        info
    }

    /// Notes the prologue instruction that just ended.
    fn unwind(&mut self, op: UnwindOp, operand: u8) {
        let end = u8::try_from(self.code.len()).expect("a prologue is short");
        self.unwind_codes.push((end, op, operand));
    }

    /// A new label, bound later with [`Asm::bind`].
    pub(crate) fn label(&mut self) -> Label {
        self.labels.label()
    }

    /// Binds `label` here.
    pub(crate) fn bind(&mut self, label: Label) {
        self.labels.bind(label, self.code.len());
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.code.extend_from_slice(bytes);
    }

    /// A REX prefix when one is needed: `w` for 64-bit operands, `reg` and `rm` the registers
    /// of the ModRM byte's fields.
    fn rex(&mut self, w: bool, reg: Option<Reg>, rm: Option<Reg>) {
        let r = reg.is_some_and(Reg::high);
        let b = rm.is_some_and(Reg::high);
        if w || r || b {
            self.code
                .push(0x40 | u8::from(w) << 3 | u8::from(r) << 2 | u8::from(b));
        }
    }

    /// A ModRM byte for two registers.
    fn modrm_regs(&mut self, reg: u8, rm: Reg) {
        self.code.push(0xc0 | (reg & 7) << 3 | rm.low());
    }

    /// A ModRM byte (and SIB when `base` is rsp or r12) for `[base + disp8]`.
    fn modrm_mem(&mut self, reg: u8, base: Reg, disp: i8) {
        self.code.push(0x40 | (reg & 7) << 3 | base.low());
        if base.low() == 4 {
            self.code.push(0x24);
        }
        self.code.push(disp as u8);
    }

    /// A ModRM byte for `[rip + disp32]`, the displacement relocated against `symbol + addend`.
    fn modrm_rip(&mut self, reg: u8, symbol: SymbolId, addend: i64, flags: RelocationFlags) {
        self.code.push((reg & 7) << 3 | 0b101);
        self.relocs.push(Relocation {
            offset: self.code.len() as u64,
            symbol,
            addend: addend - 4,
            flags,
        });
        self.bytes(&[0; 4]);
    }

    /// `push r64`
    pub(crate) fn push(&mut self, reg: Reg) {
        self.rex(false, None, Some(reg));
        self.code.push(0x50 + reg.low());
        self.unwind(UnwindOp::PushNonvolatile, reg as u8);
        self.cfa += 8;
        let end = self.code.len() as u32;
        self.cfi.push((end, Cfi::CfaOffset(self.cfa)));
        self.cfi
            .push((end, Cfi::Saved(reg.dwarf(), -(self.cfa as i32))));
    }

    /// `pop r64`
    pub(crate) fn pop(&mut self, reg: Reg) {
        self.rex(false, None, Some(reg));
        self.code.push(0x58 + reg.low());
    }

    /// `sub rsp, imm8`
    pub(crate) fn sub_rsp(&mut self, imm: i8) {
        self.bytes(&[0x48, 0x83, 0xec, imm as u8]);
        debug_assert!(imm >= 8 && imm % 8 == 0);
        self.unwind(UnwindOp::AllocSmall, (imm / 8 - 1) as u8);
        self.cfa += imm as u32;
        self.cfi
            .push((self.code.len() as u32, Cfi::CfaOffset(self.cfa)));
    }

    /// `add rsp, imm8`
    pub(crate) fn add_rsp(&mut self, imm: i8) {
        self.bytes(&[0x48, 0x83, 0xc4, imm as u8]);
    }

    /// `add r64, imm8`
    pub(crate) fn add_imm(&mut self, reg: Reg, imm: i8) {
        self.rex(true, None, Some(reg));
        self.code.push(0x83);
        self.modrm_regs(0, reg);
        self.code.push(imm as u8);
    }

    /// `mov r64, r64`
    pub(crate) fn mov(&mut self, dst: Reg, src: Reg) {
        self.rex(true, Some(src), Some(dst));
        self.code.push(0x89);
        self.modrm_regs(src as u8, dst);
    }

    /// `mov r32, imm32` (zero-extended into the whole register)
    pub(crate) fn mov_imm32(&mut self, dst: Reg, imm: i32) {
        self.rex(false, None, Some(dst));
        self.code.push(0xb8 + dst.low());
        self.bytes(&imm.to_le_bytes());
    }

    /// `xor r32, r32` (zeroes the whole register)
    pub(crate) fn zero(&mut self, reg: Reg) {
        self.rex(false, Some(reg), Some(reg));
        self.code.push(0x31);
        self.modrm_regs(reg as u8, reg);
    }

    /// `mov r64, [base + disp8]`
    pub(crate) fn load64(&mut self, dst: Reg, base: Reg, disp: i8) {
        self.rex(true, Some(dst), Some(base));
        self.code.push(0x8b);
        self.modrm_mem(dst as u8, base, disp);
    }

    /// `mov r32, [base + disp8]`
    pub(crate) fn load32(&mut self, dst: Reg, base: Reg, disp: i8) {
        self.rex(false, Some(dst), Some(base));
        self.code.push(0x8b);
        self.modrm_mem(dst as u8, base, disp);
    }

    /// `movzx r32, word [base + disp8]`
    pub(crate) fn load16(&mut self, dst: Reg, base: Reg, disp: i8) {
        self.rex(false, Some(dst), Some(base));
        self.bytes(&[0x0f, 0xb7]);
        self.modrm_mem(dst as u8, base, disp);
    }

    /// `mov [base + disp8], r64`
    pub(crate) fn store64(&mut self, base: Reg, disp: i8, src: Reg) {
        self.rex(true, Some(src), Some(base));
        self.code.push(0x89);
        self.modrm_mem(src as u8, base, disp);
    }

    /// `mov qword [base + disp8], imm32` (sign-extended)
    pub(crate) fn store64_imm(&mut self, base: Reg, disp: i8, imm: i32) {
        self.rex(true, None, Some(base));
        self.code.push(0xc7);
        self.modrm_mem(0, base, disp);
        self.bytes(&imm.to_le_bytes());
    }

    /// `lea r64, [rip + symbol + addend]`
    pub(crate) fn lea(&mut self, dst: Reg, symbol: SymbolId, addend: i64) {
        self.rex(true, Some(dst), None);
        self.code.push(0x8d);
        self.modrm_rip(dst as u8, symbol, addend, self.format.pc32());
    }

    /// `mov r64, [rip + symbol]`
    pub(crate) fn load_rip(&mut self, dst: Reg, symbol: SymbolId) {
        self.rex(true, Some(dst), None);
        self.code.push(0x8b);
        self.modrm_rip(dst as u8, symbol, 0, self.format.pc32());
    }

    /// `mov r64, [rip + symbol@GOTPCREL]` (ELF: the address of `symbol` from the GOT)
    pub(crate) fn load_got(&mut self, dst: Reg, symbol: SymbolId) {
        self.rex(true, Some(dst), None);
        self.code.push(0x8b);
        let flags = RelocationFlags::Elf {
            r_type: object::elf::R_X86_64_REX_GOTPCRELX,
        };
        self.modrm_rip(dst as u8, symbol, 0, flags);
    }

    /// `mov [rip + symbol], r64`
    pub(crate) fn store_rip(&mut self, symbol: SymbolId, src: Reg) {
        self.rex(true, Some(src), None);
        self.code.push(0x89);
        self.modrm_rip(src as u8, symbol, 0, self.format.pc32());
    }

    /// `call symbol`
    pub(crate) fn call(&mut self, symbol: SymbolId) {
        self.code.push(0xe8);
        self.relocs.push(Relocation {
            offset: self.code.len() as u64,
            symbol,
            addend: -4,
            flags: self.format.call32(),
        });
        self.bytes(&[0; 4]);
    }

    /// `call r64`
    pub(crate) fn call_reg(&mut self, reg: Reg) {
        self.rex(false, None, Some(reg));
        self.code.push(0xff);
        self.modrm_regs(2, reg);
    }

    /// `cmp r64, r64` (flags of `a - b`)
    pub(crate) fn cmp(&mut self, a: Reg, b: Reg) {
        self.rex(true, Some(b), Some(a));
        self.code.push(0x39);
        self.modrm_regs(b as u8, a);
    }

    /// `cmp r32, imm8`
    pub(crate) fn cmp_imm(&mut self, reg: Reg, imm: i8) {
        self.rex(false, None, Some(reg));
        self.code.push(0x83);
        self.modrm_regs(7, reg);
        self.code.push(imm as u8);
    }

    /// `test r64, r64`
    pub(crate) fn test(&mut self, reg: Reg) {
        self.rex(true, Some(reg), Some(reg));
        self.code.push(0x85);
        self.modrm_regs(reg as u8, reg);
    }

    /// `shr r32, imm8`
    pub(crate) fn shr(&mut self, reg: Reg, imm: u8) {
        self.rex(false, None, Some(reg));
        self.code.push(0xc1);
        self.modrm_regs(5, reg);
        self.code.push(imm);
    }

    /// `and r32, imm8`
    pub(crate) fn and_imm(&mut self, reg: Reg, imm: i8) {
        self.rex(false, None, Some(reg));
        self.code.push(0x83);
        self.modrm_regs(4, reg);
        self.code.push(imm as u8);
    }

    /// `jcc rel32`
    pub(crate) fn jump_if(&mut self, cond: Cond, label: Label) {
        self.bytes(&[0x0f, 0x80 | cond as u8]);
        self.labels.branch(self.code.len(), label, ());
        self.bytes(&[0; 4]);
    }

    /// `jmp rel32`
    pub(crate) fn jump(&mut self, label: Label) {
        self.code.push(0xe9);
        self.labels.branch(self.code.len(), label, ());
        self.bytes(&[0; 4]);
    }

    /// `ret`
    pub(crate) fn ret(&mut self) {
        self.code.push(0xc3);
    }
}

/// For an x86-64 host, the calling convention of its code and the format of its relocations;
/// `None` for AArch64.
pub(crate) fn conventions(host: Host) -> Option<(Conv, Format)> {
    match host {
        Host::ElfX86_64 => Some((Conv::SysV, Format::Elf)),
        Host::CoffX86_64 => Some((Conv::Win64, Format::Coff)),
        #[cfg(test)]
        Host::ElfX86_64MsAbi => Some((Conv::Win64, Format::Elf)),
        Host::ElfAarch64 => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_encode_as_the_manual_says() {
        let mut a = Asm::new(Format::Elf);
        a.push(Reg::R12); // 41 54
        a.mov(Reg::R12, Reg::Rcx); // 49 89 cc
        a.load64(Reg::Rdx, Reg::Rbx, 16); // 48 8b 53 10
        a.load16(Reg::Rax, Reg::Rbx, 10); // 0f b7 43 0a
        a.store64(Reg::Rsp, 32, Reg::Rax); // 48 89 44 24 20
        a.store64_imm(Reg::Rsp, 40, -1); // 48 c7 44 24 28 ff ff ff ff
        a.mov_imm32(Reg::R8, -1); // 41 b8 ff ff ff ff
        a.zero(Reg::R9); // 45 31 c9
        a.cmp(Reg::Rbx, Reg::R13); // 4c 39 eb
        a.shr(Reg::R9, 3); // 41 c1 e9 03
        a.and_imm(Reg::Rax, 7); // 83 e0 07
        a.add_imm(Reg::Rbx, 56); // 48 83 c3 38
        a.call_reg(Reg::Rax); // ff d0
        a.pop(Reg::Rbx); // 5b
        let code = a.finish().code;
        assert_eq!(
            code,
            [
                0x41, 0x54, 0x49, 0x89, 0xcc, 0x48, 0x8b, 0x53, 0x10, 0x0f, 0xb7, 0x43, 0x0a, 0x48,
                0x89, 0x44, 0x24, 0x20, 0x48, 0xc7, 0x44, 0x24, 0x28, 0xff, 0xff, 0xff, 0xff, 0x41,
                0xb8, 0xff, 0xff, 0xff, 0xff, 0x45, 0x31, 0xc9, 0x4c, 0x39, 0xeb, 0x41, 0xc1, 0xe9,
                0x03, 0x83, 0xe0, 0x07, 0x48, 0x83, 0xc3, 0x38, 0xff, 0xd0, 0x5b
            ]
        );
    }

    #[test]
    fn prologues_give_their_unwind_codes() {
        let mut a = Asm::new(Format::Coff);
        a.push(Reg::Rbx); // ends at 1
        a.push(Reg::R12); // ends at 3
        a.sub_rsp(80); // ends at 7
        a.mov(Reg::R12, Reg::Rcx);
        a.ret();
        // Version 1, a 7-byte prologue, 3 codes from the last, padded to an even count:
        // ALLOC_SMALL (80 - 8) / 8, PUSH_NONVOL r12, PUSH_NONVOL rbx.
        assert_eq!(
            a.finish().unwind.unwrap(),
            [1, 7, 3, 0, 7, 0x92, 3, 0xc0, 1, 0x30, 0, 0]
        );
    }

    #[test]
    fn branches_reach_their_labels() {
        let mut a = Asm::new(Format::Elf);
        let top = a.label();
        let end = a.label();
        a.bind(top);
        a.jump_if(Cond::Equal, end); // 0f 84 +5
        a.jump(top); // e9 -10
        a.bind(end);
        a.ret();
        let code = a.finish().code;
        assert_eq!(
            code,
            [0x0f, 0x84, 5, 0, 0, 0, 0xe9, 0xf5, 0xff, 0xff, 0xff, 0xc3]
        );
    }
}
