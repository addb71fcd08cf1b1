//! Target triples (`arch-vendor-os-environment`) parsed exactly as LLVM 19's `llvm::Triple`
//! parses them, so that bundle entry IDs are validated and matched as clang-offload-bundler 19
//! validates and matches them.
//!
//! The bundler asks three things of a triple: whether its architecture is known (an unknown one
//! is an `unknown target triple` error), whether it names an AMDGPU or NVPTX target, and whether
//! it is compatible with another triple. Compatibility compares the *parsed* components, not the
//! text, so every name table below, the way it is matched (exactly, by prefix or by suffix) and
//! the order in which it is tried follow LLVM 19.1. Parsing never fails: a name LLVM does not
//! know becomes the `Unknown*` value of its component.
//!
//! Every enum lists its values in LLVM 19's declaration order, so `value as u8` is LLVM's
//! numeric value; that is what lets tests compare this module with the real library.

use std::fmt;

/// The architecture component, as LLVM 19's `Triple::ArchType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// Anything LLVM does not recognise, including the empty string and wrong case (`AMDGCN`).
    UnknownArch,
    /// Little-endian ARM: `arm`, `xscale`, and `arm`/`armv*` names the ARM parser accepts.
    Arm,
    /// Big-endian ARM: `armeb`, `xscaleeb`, `armebv*`, `armv*eb`.
    Armeb,
    /// `aarch64`, `arm64`, `arm64e`, `arm64ec`, `aarch64v*`.
    Aarch64,
    /// `aarch64_be`.
    Aarch64Be,
    /// ILP32 AArch64: `aarch64_32`, `arm64_32`.
    Aarch64_32,
    /// `arc`.
    Arc,
    /// `avr`.
    Avr,
    /// `bpfel`, `bpf_le`, and `bpf` on a little-endian host.
    Bpfel,
    /// `bpfeb`, `bpf_be`, and `bpf` on a big-endian host.
    Bpfeb,
    /// `csky`.
    Csky,
    /// `dxil`, `dxilv1.0` to `dxilv1.8`.
    Dxil,
    /// `hexagon`.
    Hexagon,
    /// `loongarch32`.
    Loongarch32,
    /// `loongarch64`.
    Loongarch64,
    /// `m68k`.
    M68k,
    /// `mips`, `mipseb`, `mipsallegrex`, `mipsisa32r6`, `mipsr6`.
    Mips,
    /// `mipsel`, `mipsallegrexel`, `mipsisa32r6el`, `mipsr6el`.
    Mipsel,
    /// `mips64`, `mips64eb`, `mipsn32`, `mipsisa64r6`, `mips64r6`, `mipsn32r6`.
    Mips64,
    /// `mips64el`, `mipsn32el`, `mipsisa64r6el`, `mips64r6el`, `mipsn32r6el`.
    Mips64el,
    /// `msp430`.
    Msp430,
    /// `powerpc`, `powerpcspe`, `ppc`, `ppc32`.
    Ppc,
    /// `powerpcle`, `ppcle`, `ppc32le`.
    Ppcle,
    /// `powerpc64`, `ppu`, `ppc64`.
    Ppc64,
    /// `powerpc64le`, `ppc64le`.
    Ppc64le,
    /// `r600`: AMD GPUs before GCN.
    R600,
    /// `amdgcn`: AMD GCN and later GPUs.
    Amdgcn,
    /// `riscv32`.
    Riscv32,
    /// `riscv64`.
    Riscv64,
    /// `sparc`.
    Sparc,
    /// `sparcv9`, `sparc64`.
    Sparcv9,
    /// `sparcel`.
    Sparcel,
    /// `s390x`, `systemz`.
    Systemz,
    /// `tce`.
    Tce,
    /// `tcele`.
    Tcele,
    /// Little-endian Thumb: `thumb`, `thumbv*`, and `armv6m`-class names.
    Thumb,
    /// Big-endian Thumb: `thumbeb`, `thumbebv*`, `thumbv*eb`.
    Thumbeb,
    /// `i386` to `i986`.
    X86,
    /// `x86_64`, `amd64`, `x86_64h`.
    X86_64,
    /// `xcore`.
    Xcore,
    /// `xtensa`.
    Xtensa,
    /// `nvptx`: 32-bit NVIDIA PTX.
    Nvptx,
    /// `nvptx64`: 64-bit NVIDIA PTX.
    Nvptx64,
    /// `le32`.
    Le32,
    /// `le64`.
    Le64,
    /// `amdil`.
    Amdil,
    /// `amdil64`.
    Amdil64,
    /// `hsail`.
    Hsail,
    /// `hsail64`.
    Hsail64,
    /// `spir`.
    Spir,
    /// `spir64`.
    Spir64,
    /// `spirv`, `spirv1.5`, `spirv1.6`.
    Spirv,
    /// `spirv32`, `spirv32v1.0` to `spirv32v1.6`.
    Spirv32,
    /// `spirv64`, `spirv64v1.0` to `spirv64v1.6`.
    Spirv64,
    /// Any name starting with `kalimba`.
    Kalimba,
    /// `shave`.
    Shave,
    /// `lanai`.
    Lanai,
    /// `wasm32`.
    Wasm32,
    /// `wasm64`.
    Wasm64,
    /// `renderscript32`.
    Renderscript32,
    /// `renderscript64`.
    Renderscript64,
    /// `ve`.
    Ve,
}

/// The sub-architecture LLVM 19 derives from the architecture name (`Triple::SubArchType`).
///
/// Two triples with the same [`Arch`] but different sub-architectures (`armv7a` and `armv7m`,
/// `arm64` and `arm64e`, `spirv64v1.0` and `spirv64`) are not compatible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubArch {
    /// No sub-architecture.
    NoSubArch,
    /// ARMv9.5-A.
    ArmV9_5a,
    /// ARMv9.4-A.
    ArmV9_4a,
    /// ARMv9.3-A.
    ArmV9_3a,
    /// ARMv9.2-A.
    ArmV9_2a,
    /// ARMv9.1-A.
    ArmV9_1a,
    /// ARMv9-A.
    ArmV9,
    /// ARMv8.9-A.
    ArmV8_9a,
    /// ARMv8.8-A.
    ArmV8_8a,
    /// ARMv8.7-A.
    ArmV8_7a,
    /// ARMv8.6-A.
    ArmV8_6a,
    /// ARMv8.5-A.
    ArmV8_5a,
    /// ARMv8.4-A.
    ArmV8_4a,
    /// ARMv8.3-A.
    ArmV8_3a,
    /// ARMv8.2-A.
    ArmV8_2a,
    /// ARMv8.1-A.
    ArmV8_1a,
    /// ARMv8-A (`armv8`, `armv8a`, `armv8l`).
    ArmV8,
    /// ARMv8-R.
    ArmV8r,
    /// ARMv8-M Baseline.
    ArmV8mBaseline,
    /// ARMv8-M Mainline.
    ArmV8mMainline,
    /// ARMv8.1-M Mainline.
    ArmV8_1mMainline,
    /// ARMv7-A and ARMv7-R.
    ArmV7,
    /// ARMv7E-M.
    ArmV7em,
    /// ARMv7-M.
    ArmV7m,
    /// ARMv7s (Apple).
    ArmV7s,
    /// ARMv7k (Apple).
    ArmV7k,
    /// ARMv7VE.
    ArmV7ve,
    /// ARMv6.
    ArmV6,
    /// ARMv6-M.
    ArmV6m,
    /// ARMv6K and ARMv6KZ.
    ArmV6k,
    /// ARMv6T2.
    ArmV6t2,
    /// ARMv5T.
    ArmV5,
    /// ARMv5TE, ARMv5TEJ, XScale and iWMMXt.
    ArmV5te,
    /// ARMv4T.
    ArmV4t,
    /// `arm64e`.
    Aarch64Arm64e,
    /// `arm64ec`.
    Aarch64Arm64ec,
    /// Kalimba v3.
    KalimbaV3,
    /// Kalimba v4.
    KalimbaV4,
    /// Kalimba v5.
    KalimbaV5,
    /// MIPS release 6 (`mips*r6`, `mips*r6el`).
    MipsR6,
    /// `powerpcspe`.
    PpcSpe,
    /// SPIR-V 1.0.
    SpirvV1_0,
    /// SPIR-V 1.1.
    SpirvV1_1,
    /// SPIR-V 1.2.
    SpirvV1_2,
    /// SPIR-V 1.3.
    SpirvV1_3,
    /// SPIR-V 1.4.
    SpirvV1_4,
    /// SPIR-V 1.5.
    SpirvV1_5,
    /// SPIR-V 1.6.
    SpirvV1_6,
    /// DXIL 1.0.
    DxilV1_0,
    /// DXIL 1.1.
    DxilV1_1,
    /// DXIL 1.2.
    DxilV1_2,
    /// DXIL 1.3.
    DxilV1_3,
    /// DXIL 1.4.
    DxilV1_4,
    /// DXIL 1.5.
    DxilV1_5,
    /// DXIL 1.6.
    DxilV1_6,
    /// DXIL 1.7.
    DxilV1_7,
    /// DXIL 1.8.
    DxilV1_8,
}

/// The vendor component (`Triple::VendorType`), matched exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// Any other name, including `unknown`, `w64` and the empty string.
    UnknownVendor,
    /// `apple`.
    Apple,
    /// `pc`.
    Pc,
    /// `scei`, `sie`.
    Scei,
    /// `fsl`.
    Freescale,
    /// `ibm`.
    Ibm,
    /// `img`.
    ImaginationTechnologies,
    /// `mti`.
    MipsTechnologies,
    /// `nvidia`.
    Nvidia,
    /// `csr`.
    Csr,
    /// `amd`.
    Amd,
    /// `mesa`.
    Mesa,
    /// `suse`.
    Suse,
    /// `oe`.
    OpenEmbedded,
}

/// The operating-system component (`Triple::OSType`), matched by prefix, so a version may
/// follow the name (`macosx10.15`, `ios17.0`, `vulkan1.3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Os {
    /// Any other name, including `unknown`, `none`, `mingw32` and the empty string.
    UnknownOs,
    /// `darwin*`.
    Darwin,
    /// `dragonfly*`.
    DragonFly,
    /// `freebsd*`.
    FreeBsd,
    /// `fuchsia*`.
    Fuchsia,
    /// `ios*`.
    Ios,
    /// `kfreebsd*`.
    KFreeBsd,
    /// `linux*`.
    Linux,
    /// `lv2*` (PS3).
    Lv2,
    /// `macos*` (including `macosx*`).
    MacOsx,
    /// `netbsd*`.
    NetBsd,
    /// `openbsd*`.
    OpenBsd,
    /// `solaris*`.
    Solaris,
    /// `uefi*`.
    Uefi,
    /// `win32*`, `windows*`.
    Win32,
    /// `zos*`.
    Zos,
    /// `haiku*`.
    Haiku,
    /// `rtems*`.
    Rtems,
    /// `nacl*`.
    NaCl,
    /// `aix*`.
    Aix,
    /// `cuda*`.
    Cuda,
    /// `nvcl*`.
    Nvcl,
    /// `amdhsa*`.
    AmdHsa,
    /// `ps4*`.
    Ps4,
    /// `ps5*`.
    Ps5,
    /// `elfiamcu*`.
    ElfIamcu,
    /// `tvos*`.
    TvOs,
    /// `watchos*`.
    WatchOs,
    /// `bridgeos*`.
    BridgeOs,
    /// `driverkit*`.
    DriverKit,
    /// `xros*`, `visionos*`.
    XrOs,
    /// `mesa3d*`.
    Mesa3D,
    /// `amdpal*`.
    AmdPal,
    /// `hermit*`.
    HermitCore,
    /// `hurd*`.
    Hurd,
    /// `wasi*`.
    Wasi,
    /// `emscripten*`.
    Emscripten,
    /// `shadermodel*`.
    ShaderModel,
    /// `liteos*`.
    LiteOs,
    /// `serenity*`.
    Serenity,
    /// `vulkan*`.
    Vulkan,
}

/// The environment component (`Triple::EnvironmentType`), matched by prefix in LLVM's order,
/// so `gnu2.17` is [`Environment::Gnu`] and `gnueabihf` is not [`Environment::GnuEabi`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Environment {
    /// Any other name, including `unknown`, `elf`, `coff` and the empty string.
    UnknownEnvironment,
    /// `gnu*` not matched by a longer GNU name.
    Gnu,
    /// `gnuabin32*`.
    GnuAbiN32,
    /// `gnuabi64*`.
    GnuAbi64,
    /// `gnueabi*`.
    GnuEabi,
    /// `gnueabihf*`.
    GnuEabiHf,
    /// `gnuf32*`.
    GnuF32,
    /// `gnuf64*`.
    GnuF64,
    /// `gnusf*`.
    GnuSf,
    /// `gnux32*`.
    GnuX32,
    /// `gnu_ilp32*`.
    GnuIlp32,
    /// `code16*`.
    Code16,
    /// `eabi*`.
    Eabi,
    /// `eabihf*`.
    EabiHf,
    /// `android*`.
    Android,
    /// `musl*` not matched by a longer musl name (so also `muslabi64`).
    Musl,
    /// `musleabi*`.
    MuslEabi,
    /// `musleabihf*`.
    MuslEabiHf,
    /// `muslx32*`.
    MuslX32,
    /// `msvc*`.
    Msvc,
    /// `itanium*`.
    Itanium,
    /// `cygnus*`.
    Cygnus,
    /// `coreclr*`.
    CoreClr,
    /// `simulator*`.
    Simulator,
    /// `macabi*`.
    MacAbi,
    /// `pixel*`.
    Pixel,
    /// `vertex*`.
    Vertex,
    /// `geometry*`.
    Geometry,
    /// `hull*`.
    Hull,
    /// `domain*`.
    Domain,
    /// `compute*`.
    Compute,
    /// `library*`.
    Library,
    /// `raygeneration*`.
    RayGeneration,
    /// `intersection*`.
    Intersection,
    /// `anyhit*`.
    AnyHit,
    /// `closesthit*`.
    ClosestHit,
    /// `miss*`.
    Miss,
    /// `callable*`.
    Callable,
    /// `mesh*`.
    Mesh,
    /// `amplification*`.
    Amplification,
    /// `opencl*`.
    OpenCl,
    /// `ohos*`.
    OpenHos,
    /// `pauthtest*`.
    PAuthTest,
    /// `gnut64*`.
    GnuT64,
    /// `gnueabit64*`.
    GnuEabiT64,
    /// `gnueabihft64*`.
    GnuEabiHfT64,
}

/// The object file format (`Triple::ObjectFormatType`): taken from the end of the environment
/// (`-elf`, `-coff`, `msvc-elf`), or else LLVM 19's default for the architecture and OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectFormat {
    /// No format; never the final value of a parsed triple, which falls back to a default.
    UnknownObjectFormat,
    /// COFF: the default for x86, ARM and AArch64 on Windows and UEFI.
    Coff,
    /// DXContainer: the default for `dxil`.
    DxContainer,
    /// ELF: the default for most targets.
    Elf,
    /// GOFF: the default for SystemZ on z/OS.
    Goff,
    /// Mach-O: the default for Darwin-family systems.
    MachO,
    /// SPIR-V: the default for `spirv`, `spirv32` and `spirv64`.
    Spirv,
    /// WebAssembly: the default for `wasm32` and `wasm64`.
    Wasm,
    /// XCOFF: the default for PowerPC on AIX.
    Xcoff,
}

/// A target triple: the text it was built from and its six parsed components.
///
/// Equality (`==`) compares the text and the components; LLVM's looser notion, under which
/// `amdgcn-amd-amdhsa-` and `amdgcn-amd-amdhsa-unknown` match, is
/// [`Triple::is_compatible_with`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Triple {
    data: String,
    arch: Arch,
    sub_arch: SubArch,
    vendor: Vendor,
    os: Os,
    environment: Environment,
    object_format: ObjectFormat,
}

impl Triple {
    /// Parses `text` as LLVM's one-string constructor does: split on `-` into at most four
    /// pieces (arch, vendor, OS, and an environment that keeps any further `-`), missing pieces
    /// left unknown. A bare MIPS arch name (`mips64`, no `-`) also implies its GNU environment.
    pub fn new(text: &str) -> Triple {
        let mut pieces = text.splitn(4, '-');
        let arch_name = pieces.next().unwrap_or("");
        let mut triple = Triple {
            data: text.to_string(),
            arch: parse_arch(arch_name),
            sub_arch: parse_sub_arch(arch_name),
            vendor: Vendor::UnknownVendor,
            os: Os::UnknownOs,
            environment: Environment::UnknownEnvironment,
            object_format: ObjectFormat::UnknownObjectFormat,
        };
        match pieces.next() {
            None => triple.environment = bare_mips_environment(arch_name),
            Some(vendor_name) => {
                triple.vendor = parse_vendor(vendor_name);
                if let Some(os_name) = pieces.next() {
                    triple.os = parse_os(os_name);
                    if let Some(environment_name) = pieces.next() {
                        triple.environment = parse_environment(environment_name);
                        triple.object_format = parse_object_format(environment_name);
                    }
                }
            }
        }
        triple.fill_default_object_format();
        triple
    }

    /// Builds a triple from four pieces as LLVM's four-string constructor does: the text is
    /// always `arch-vendor-os-environment`, even when pieces are empty (`x86_64---`), and each
    /// component is parsed from its own piece.
    pub fn from_parts(arch: &str, vendor: &str, os: &str, environment: &str) -> Triple {
        let mut triple = Triple {
            data: format!("{arch}-{vendor}-{os}-{environment}"),
            arch: parse_arch(arch),
            sub_arch: parse_sub_arch(arch),
            vendor: parse_vendor(vendor),
            os: parse_os(os),
            environment: parse_environment(environment),
            object_format: parse_object_format(environment),
        };
        triple.fill_default_object_format();
        triple
    }

    fn fill_default_object_format(&mut self) {
        if self.object_format == ObjectFormat::UnknownObjectFormat {
            self.object_format = default_object_format(self.arch, self.os);
        }
    }

    /// The whole text (LLVM's `Triple::str()`).
    pub fn as_str(&self) -> &str {
        &self.data
    }

    /// The text before the first `-` (LLVM's `getArchName`).
    pub fn arch_name(&self) -> &str {
        split_first(&self.data).0
    }

    /// The text between the first and second `-`, or empty (LLVM's `getVendorName`).
    pub fn vendor_name(&self) -> &str {
        split_first(self.after_arch()).0
    }

    /// The text between the second and third `-`, or empty (LLVM's `getOSName`).
    pub fn os_name(&self) -> &str {
        split_first(self.after_vendor()).0
    }

    /// Everything after the third `-`, which may itself contain `-`, or empty (LLVM's
    /// `getEnvironmentName`).
    pub fn environment_name(&self) -> &str {
        split_first(self.after_vendor()).1
    }

    fn after_arch(&self) -> &str {
        split_first(&self.data).1
    }

    fn after_vendor(&self) -> &str {
        split_first(self.after_arch()).1
    }

    /// The parsed architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The parsed sub-architecture.
    pub fn sub_arch(&self) -> SubArch {
        self.sub_arch
    }

    /// The parsed vendor.
    pub fn vendor(&self) -> Vendor {
        self.vendor
    }

    /// The parsed operating system.
    pub fn os(&self) -> Os {
        self.os
    }

    /// The parsed environment.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The object format: from the environment's suffix, or the default for the triple.
    pub fn object_format(&self) -> ObjectFormat {
        self.object_format
    }

    /// Whether the architecture is `amdgcn`.
    pub fn is_amdgcn(&self) -> bool {
        self.arch == Arch::Amdgcn
    }

    /// Whether the architecture is `r600`.
    pub fn is_r600(&self) -> bool {
        self.arch == Arch::R600
    }

    /// Whether the architecture is an AMD GPU (`amdgcn` or `r600`).
    pub fn is_amdgpu(&self) -> bool {
        self.is_amdgcn() || self.is_r600()
    }

    /// Whether the architecture is NVIDIA PTX (`nvptx` or `nvptx64`).
    pub fn is_nvptx(&self) -> bool {
        matches!(self.arch, Arch::Nvptx | Arch::Nvptx64)
    }

    /// LLVM 19's `Triple::isCompatibleWith`: the rule the bundler uses to match an entry's
    /// triple (`self`) against a requested one.
    ///
    /// - An ARM/Thumb pair of the same endianness matches when sub-architecture, vendor and OS
    ///   match, and, unless `self`'s vendor is Apple, environment and object format too.
    /// - Otherwise, when `self`'s vendor is Apple, the environment and object format are
    ///   ignored.
    /// - Otherwise all six components must be equal.
    pub fn is_compatible_with(&self, other: &Triple) -> bool {
        let same_platform =
            self.sub_arch == other.sub_arch && self.vendor == other.vendor && self.os == other.os;
        let same_abi =
            self.environment == other.environment && self.object_format == other.object_format;
        let ignore_abi = self.vendor == Vendor::Apple;
        if is_arm_thumb_pair(self.arch, other.arch) {
            return same_platform && (ignore_abi || same_abi);
        }
        self.arch == other.arch && same_platform && (ignore_abi || same_abi)
    }
}

impl fmt::Display for Triple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.data)
    }
}

/// LLVM's `StringRef::split('-')`: the text before the first `-` and the text after it.
fn split_first(text: &str) -> (&str, &str) {
    text.split_once('-').unwrap_or((text, ""))
}

fn is_arm_thumb_pair(a: Arch, b: Arch) -> bool {
    matches!(
        (a, b),
        (Arch::Arm, Arch::Thumb)
            | (Arch::Thumb, Arch::Arm)
            | (Arch::Armeb, Arch::Thumbeb)
            | (Arch::Thumbeb, Arch::Armeb)
    )
}

/// Architecture names LLVM 19 matches exactly, before trying its prefix rules.
const ARCH_NAMES: &[(&str, Arch)] = &[
    ("i386", Arch::X86),
    ("i486", Arch::X86),
    ("i586", Arch::X86),
    ("i686", Arch::X86),
    ("i786", Arch::X86),
    ("i886", Arch::X86),
    ("i986", Arch::X86),
    ("amd64", Arch::X86_64),
    ("x86_64", Arch::X86_64),
    ("x86_64h", Arch::X86_64),
    ("powerpc", Arch::Ppc),
    ("powerpcspe", Arch::Ppc),
    ("ppc", Arch::Ppc),
    ("ppc32", Arch::Ppc),
    ("powerpcle", Arch::Ppcle),
    ("ppcle", Arch::Ppcle),
    ("ppc32le", Arch::Ppcle),
    ("powerpc64", Arch::Ppc64),
    ("ppu", Arch::Ppc64),
    ("ppc64", Arch::Ppc64),
    ("powerpc64le", Arch::Ppc64le),
    ("ppc64le", Arch::Ppc64le),
    ("xscale", Arch::Arm),
    ("xscaleeb", Arch::Armeb),
    ("aarch64", Arch::Aarch64),
    ("aarch64_be", Arch::Aarch64Be),
    ("aarch64_32", Arch::Aarch64_32),
    ("arc", Arch::Arc),
    ("arm64", Arch::Aarch64),
    ("arm64_32", Arch::Aarch64_32),
    ("arm64e", Arch::Aarch64),
    ("arm64ec", Arch::Aarch64),
    ("arm", Arch::Arm),
    ("armeb", Arch::Armeb),
    ("thumb", Arch::Thumb),
    ("thumbeb", Arch::Thumbeb),
    ("avr", Arch::Avr),
    ("m68k", Arch::M68k),
    ("msp430", Arch::Msp430),
    ("mips", Arch::Mips),
    ("mipseb", Arch::Mips),
    ("mipsallegrex", Arch::Mips),
    ("mipsisa32r6", Arch::Mips),
    ("mipsr6", Arch::Mips),
    ("mipsel", Arch::Mipsel),
    ("mipsallegrexel", Arch::Mipsel),
    ("mipsisa32r6el", Arch::Mipsel),
    ("mipsr6el", Arch::Mipsel),
    ("mips64", Arch::Mips64),
    ("mips64eb", Arch::Mips64),
    ("mipsn32", Arch::Mips64),
    ("mipsisa64r6", Arch::Mips64),
    ("mips64r6", Arch::Mips64),
    ("mipsn32r6", Arch::Mips64),
    ("mips64el", Arch::Mips64el),
    ("mipsn32el", Arch::Mips64el),
    ("mipsisa64r6el", Arch::Mips64el),
    ("mips64r6el", Arch::Mips64el),
    ("mipsn32r6el", Arch::Mips64el),
    ("r600", Arch::R600),
    ("amdgcn", Arch::Amdgcn),
    ("riscv32", Arch::Riscv32),
    ("riscv64", Arch::Riscv64),
    ("hexagon", Arch::Hexagon),
    ("s390x", Arch::Systemz),
    ("systemz", Arch::Systemz),
    ("sparc", Arch::Sparc),
    ("sparcel", Arch::Sparcel),
    ("sparcv9", Arch::Sparcv9),
    ("sparc64", Arch::Sparcv9),
    ("tce", Arch::Tce),
    ("tcele", Arch::Tcele),
    ("xcore", Arch::Xcore),
    ("nvptx", Arch::Nvptx),
    ("nvptx64", Arch::Nvptx64),
    ("le32", Arch::Le32),
    ("le64", Arch::Le64),
    ("amdil", Arch::Amdil),
    ("amdil64", Arch::Amdil64),
    ("hsail", Arch::Hsail),
    ("hsail64", Arch::Hsail64),
    ("spir", Arch::Spir),
    ("spir64", Arch::Spir64),
    ("spirv", Arch::Spirv),
    ("spirv1.5", Arch::Spirv),
    ("spirv1.6", Arch::Spirv),
    ("spirv32", Arch::Spirv32),
    ("spirv32v1.0", Arch::Spirv32),
    ("spirv32v1.1", Arch::Spirv32),
    ("spirv32v1.2", Arch::Spirv32),
    ("spirv32v1.3", Arch::Spirv32),
    ("spirv32v1.4", Arch::Spirv32),
    ("spirv32v1.5", Arch::Spirv32),
    ("spirv32v1.6", Arch::Spirv32),
    ("spirv64", Arch::Spirv64),
    ("spirv64v1.0", Arch::Spirv64),
    ("spirv64v1.1", Arch::Spirv64),
    ("spirv64v1.2", Arch::Spirv64),
    ("spirv64v1.3", Arch::Spirv64),
    ("spirv64v1.4", Arch::Spirv64),
    ("spirv64v1.5", Arch::Spirv64),
    ("spirv64v1.6", Arch::Spirv64),
    ("lanai", Arch::Lanai),
    ("renderscript32", Arch::Renderscript32),
    ("renderscript64", Arch::Renderscript64),
    ("shave", Arch::Shave),
    ("ve", Arch::Ve),
    ("wasm32", Arch::Wasm32),
    ("wasm64", Arch::Wasm64),
    ("csky", Arch::Csky),
    ("loongarch32", Arch::Loongarch32),
    ("loongarch64", Arch::Loongarch64),
    ("dxil", Arch::Dxil),
    ("dxilv1.0", Arch::Dxil),
    ("dxilv1.1", Arch::Dxil),
    ("dxilv1.2", Arch::Dxil),
    ("dxilv1.3", Arch::Dxil),
    ("dxilv1.4", Arch::Dxil),
    ("dxilv1.5", Arch::Dxil),
    ("dxilv1.6", Arch::Dxil),
    ("dxilv1.7", Arch::Dxil),
    ("dxilv1.8", Arch::Dxil),
    ("xtensa", Arch::Xtensa),
];

fn parse_arch(name: &str) -> Arch {
    if let Some(&(_, arch)) = ARCH_NAMES.iter().find(|(known, _)| *known == name) {
        return arch;
    }
    // No exact name starts with "kalimba", so trying the prefix after the exact names gives
    // LLVM's first-match result.
    if name.starts_with("kalimba") {
        return Arch::Kalimba;
    }
    if name.starts_with("arm") || name.starts_with("thumb") || name.starts_with("aarch64") {
        return arm::parse_arch(name.as_bytes());
    }
    if name.starts_with("bpf") {
        return parse_bpf_arch(name);
    }
    Arch::UnknownArch
}

fn parse_bpf_arch(name: &str) -> Arch {
    match name {
        // LLVM picks the endianness of the machine it runs on.
        "bpf" if cfg!(target_endian = "big") => Arch::Bpfeb,
        "bpf" => Arch::Bpfel,
        "bpf_be" | "bpfeb" => Arch::Bpfeb,
        "bpf_le" | "bpfel" => Arch::Bpfel,
        _ => Arch::UnknownArch,
    }
}

const SPIRV_VERSIONS: &[(&str, SubArch)] = &[
    ("v1.0", SubArch::SpirvV1_0),
    ("v1.1", SubArch::SpirvV1_1),
    ("v1.2", SubArch::SpirvV1_2),
    ("v1.3", SubArch::SpirvV1_3),
    ("v1.4", SubArch::SpirvV1_4),
    ("v1.5", SubArch::SpirvV1_5),
    ("v1.6", SubArch::SpirvV1_6),
];

const DXIL_VERSIONS: &[(&str, SubArch)] = &[
    ("v1.0", SubArch::DxilV1_0),
    ("v1.1", SubArch::DxilV1_1),
    ("v1.2", SubArch::DxilV1_2),
    ("v1.3", SubArch::DxilV1_3),
    ("v1.4", SubArch::DxilV1_4),
    ("v1.5", SubArch::DxilV1_5),
    ("v1.6", SubArch::DxilV1_6),
    ("v1.7", SubArch::DxilV1_7),
    ("v1.8", SubArch::DxilV1_8),
];

const KALIMBA_VERSIONS: &[(&str, SubArch)] = &[
    ("kalimba3", SubArch::KalimbaV3),
    ("kalimba4", SubArch::KalimbaV4),
    ("kalimba5", SubArch::KalimbaV5),
];

/// The first entry of `table` whose name ends `name`, or [`SubArch::NoSubArch`].
fn sub_arch_by_suffix(name: &str, table: &[(&str, SubArch)]) -> SubArch {
    table
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map_or(SubArch::NoSubArch, |&(_, sub_arch)| sub_arch)
}

/// The sub-architecture of an arch name. This does not depend on the parsed [`Arch`]: LLVM
/// gives `spirv1.4` a SPIR-V version and `v7a` an ARM version although neither is a known
/// architecture.
fn parse_sub_arch(name: &str) -> SubArch {
    if name.starts_with("mips") && (name.ends_with("r6el") || name.ends_with("r6")) {
        return SubArch::MipsR6;
    }
    match name {
        "powerpcspe" => return SubArch::PpcSpe,
        "arm64e" => return SubArch::Aarch64Arm64e,
        "arm64ec" => return SubArch::Aarch64Arm64ec,
        _ => {}
    }
    if name.starts_with("spirv") {
        return sub_arch_by_suffix(name, SPIRV_VERSIONS);
    }
    if name.starts_with("dxil") {
        return sub_arch_by_suffix(name, DXIL_VERSIONS);
    }
    let arm_name = arm::canonical_arch_name(name.as_bytes());
    if arm_name.is_empty() {
        return sub_arch_by_suffix(name, KALIMBA_VERSIONS);
    }
    arm::sub_arch(arm::parse_arch_kind(arm_name))
}

fn parse_vendor(name: &str) -> Vendor {
    match name {
        "apple" => Vendor::Apple,
        "pc" => Vendor::Pc,
        "scei" | "sie" => Vendor::Scei,
        "fsl" => Vendor::Freescale,
        "ibm" => Vendor::Ibm,
        "img" => Vendor::ImaginationTechnologies,
        "mti" => Vendor::MipsTechnologies,
        "nvidia" => Vendor::Nvidia,
        "csr" => Vendor::Csr,
        "amd" => Vendor::Amd,
        "mesa" => Vendor::Mesa,
        "suse" => Vendor::Suse,
        "oe" => Vendor::OpenEmbedded,
        _ => Vendor::UnknownVendor,
    }
}

/// OS name prefixes in LLVM 19's order; the first that starts the OS piece wins.
const OS_PREFIXES: &[(&str, Os)] = &[
    ("darwin", Os::Darwin),
    ("dragonfly", Os::DragonFly),
    ("freebsd", Os::FreeBsd),
    ("fuchsia", Os::Fuchsia),
    ("ios", Os::Ios),
    ("kfreebsd", Os::KFreeBsd),
    ("linux", Os::Linux),
    ("lv2", Os::Lv2),
    ("macos", Os::MacOsx),
    ("netbsd", Os::NetBsd),
    ("openbsd", Os::OpenBsd),
    ("solaris", Os::Solaris),
    ("uefi", Os::Uefi),
    ("win32", Os::Win32),
    ("windows", Os::Win32),
    ("zos", Os::Zos),
    ("haiku", Os::Haiku),
    ("rtems", Os::Rtems),
    ("nacl", Os::NaCl),
    ("aix", Os::Aix),
    ("cuda", Os::Cuda),
    ("nvcl", Os::Nvcl),
    ("amdhsa", Os::AmdHsa),
    ("ps4", Os::Ps4),
    ("ps5", Os::Ps5),
    ("elfiamcu", Os::ElfIamcu),
    ("tvos", Os::TvOs),
    ("watchos", Os::WatchOs),
    ("bridgeos", Os::BridgeOs),
    ("driverkit", Os::DriverKit),
    ("xros", Os::XrOs),
    ("visionos", Os::XrOs),
    ("mesa3d", Os::Mesa3D),
    ("amdpal", Os::AmdPal),
    ("hermit", Os::HermitCore),
    ("hurd", Os::Hurd),
    ("wasi", Os::Wasi),
    ("emscripten", Os::Emscripten),
    ("shadermodel", Os::ShaderModel),
    ("liteos", Os::LiteOs),
    ("serenity", Os::Serenity),
    ("vulkan", Os::Vulkan),
];

fn parse_os(name: &str) -> Os {
    first_prefix(name, OS_PREFIXES).unwrap_or(Os::UnknownOs)
}

/// Environment name prefixes in LLVM 19's order. Longer names come before the names they
/// start with (`gnueabihf` before `gnueabi` before `gnu`), which is what makes the order
/// matter.
const ENVIRONMENT_PREFIXES: &[(&str, Environment)] = &[
    ("eabihf", Environment::EabiHf),
    ("eabi", Environment::Eabi),
    ("gnuabin32", Environment::GnuAbiN32),
    ("gnuabi64", Environment::GnuAbi64),
    ("gnueabihft64", Environment::GnuEabiHfT64),
    ("gnueabihf", Environment::GnuEabiHf),
    ("gnueabit64", Environment::GnuEabiT64),
    ("gnueabi", Environment::GnuEabi),
    ("gnuf32", Environment::GnuF32),
    ("gnuf64", Environment::GnuF64),
    ("gnusf", Environment::GnuSf),
    ("gnux32", Environment::GnuX32),
    ("gnu_ilp32", Environment::GnuIlp32),
    ("code16", Environment::Code16),
    ("gnut64", Environment::GnuT64),
    ("gnu", Environment::Gnu),
    ("android", Environment::Android),
    ("musleabihf", Environment::MuslEabiHf),
    ("musleabi", Environment::MuslEabi),
    ("muslx32", Environment::MuslX32),
    ("musl", Environment::Musl),
    ("msvc", Environment::Msvc),
    ("itanium", Environment::Itanium),
    ("cygnus", Environment::Cygnus),
    ("coreclr", Environment::CoreClr),
    ("simulator", Environment::Simulator),
    ("macabi", Environment::MacAbi),
    ("pixel", Environment::Pixel),
    ("vertex", Environment::Vertex),
    ("geometry", Environment::Geometry),
    ("hull", Environment::Hull),
    ("domain", Environment::Domain),
    ("compute", Environment::Compute),
    ("library", Environment::Library),
    ("raygeneration", Environment::RayGeneration),
    ("intersection", Environment::Intersection),
    ("anyhit", Environment::AnyHit),
    ("closesthit", Environment::ClosestHit),
    ("miss", Environment::Miss),
    ("callable", Environment::Callable),
    ("mesh", Environment::Mesh),
    ("amplification", Environment::Amplification),
    ("opencl", Environment::OpenCl),
    ("ohos", Environment::OpenHos),
    ("pauthtest", Environment::PAuthTest),
];

fn parse_environment(name: &str) -> Environment {
    first_prefix(name, ENVIRONMENT_PREFIXES).unwrap_or(Environment::UnknownEnvironment)
}

fn first_prefix<T: Copy>(name: &str, table: &[(&str, T)]) -> Option<T> {
    table
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, value)| value)
}

/// Object format suffixes of the environment piece, in LLVM 19's order (`xcoff` must be tried
/// before `coff`). `dxcontainer` is not among them in LLVM 19.
const OBJECT_FORMAT_SUFFIXES: &[(&str, ObjectFormat)] = &[
    ("xcoff", ObjectFormat::Xcoff),
    ("coff", ObjectFormat::Coff),
    ("elf", ObjectFormat::Elf),
    ("goff", ObjectFormat::Goff),
    ("macho", ObjectFormat::MachO),
    ("wasm", ObjectFormat::Wasm),
    ("spirv", ObjectFormat::Spirv),
];

fn parse_object_format(environment_name: &str) -> ObjectFormat {
    OBJECT_FORMAT_SUFFIXES
        .iter()
        .find(|(suffix, _)| environment_name.ends_with(suffix))
        .map_or(ObjectFormat::UnknownObjectFormat, |&(_, format)| format)
}

impl Os {
    /// LLVM's `isOSDarwin`: the Apple systems whose default format is Mach-O (not bridgeOS).
    fn is_darwin(self) -> bool {
        matches!(
            self,
            Os::Darwin | Os::MacOsx | Os::Ios | Os::TvOs | Os::WatchOs | Os::DriverKit | Os::XrOs
        )
    }
}

/// LLVM 19's `getDefaultFormat`, used when the environment names no format.
fn default_object_format(arch: Arch, os: Os) -> ObjectFormat {
    match arch {
        Arch::UnknownArch
        | Arch::Aarch64
        | Arch::Aarch64_32
        | Arch::Arm
        | Arch::Thumb
        | Arch::X86
        | Arch::X86_64 => match os {
            Os::Win32 | Os::Uefi => ObjectFormat::Coff,
            os if os.is_darwin() => ObjectFormat::MachO,
            _ => ObjectFormat::Elf,
        },
        Arch::Ppc | Arch::Ppc64 => match os {
            Os::Aix => ObjectFormat::Xcoff,
            os if os.is_darwin() => ObjectFormat::MachO,
            _ => ObjectFormat::Elf,
        },
        Arch::Systemz if os == Os::Zos => ObjectFormat::Goff,
        Arch::Wasm32 | Arch::Wasm64 => ObjectFormat::Wasm,
        Arch::Spirv | Arch::Spirv32 | Arch::Spirv64 => ObjectFormat::Spirv,
        Arch::Dxil => ObjectFormat::DxContainer,
        _ => ObjectFormat::Elf,
    }
}

/// The environment LLVM's one-string constructor gives a bare MIPS arch name (no `-` at all).
fn bare_mips_environment(arch_name: &str) -> Environment {
    if arch_name.starts_with("mipsn32") {
        Environment::GnuAbiN32
    } else if arch_name.starts_with("mips64") || arch_name.starts_with("mipsisa64") {
        Environment::GnuAbi64
    } else if arch_name.starts_with("mipsisa32")
        || matches!(arch_name, "mips" | "mipsel" | "mipsr6" | "mipsr6el")
    {
        Environment::Gnu
    } else {
        Environment::UnknownEnvironment
    }
}

/// LLVM 19's ARM target parser, reduced to what triple parsing needs: which ARM, Thumb or
/// AArch64 architecture and version an `arm*`, `thumb*` or `aarch64*` name denotes.
///
/// It works on bytes because LLVM's rules are byte-based and names may be any text.
mod arm {
    use super::{Arch, SubArch};

    /// LLVM's `ARM::ArchKind`, in the order of LLVM 19's ARM architecture table.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) enum ArchKind {
        Invalid,
        V4,
        V4t,
        V5t,
        V5te,
        V5tej,
        V6,
        V6k,
        V6t2,
        V6kz,
        V6m,
        V7a,
        V7ve,
        V7r,
        V7m,
        V7em,
        V8a,
        V8_1a,
        V8_2a,
        V8_3a,
        V8_4a,
        V8_5a,
        V8_6a,
        V8_7a,
        V8_8a,
        V8_9a,
        V9a,
        V9_1a,
        V9_2a,
        V9_3a,
        V9_4a,
        V9_5a,
        V8r,
        V8mBaseline,
        V8mMainline,
        V8_1mMainline,
        Iwmmxt,
        Iwmmxt2,
        Xscale,
        V7s,
        V7k,
    }

    /// LLVM 19's ARM architecture table. Lookup takes the first name that *ends with* the
    /// wanted name, so the order matters (and `invalid` comes first).
    const ARCH_KINDS: &[(&[u8], ArchKind)] = &[
        (b"invalid", ArchKind::Invalid),
        (b"armv4", ArchKind::V4),
        (b"armv4t", ArchKind::V4t),
        (b"armv5t", ArchKind::V5t),
        (b"armv5te", ArchKind::V5te),
        (b"armv5tej", ArchKind::V5tej),
        (b"armv6", ArchKind::V6),
        (b"armv6k", ArchKind::V6k),
        (b"armv6t2", ArchKind::V6t2),
        (b"armv6kz", ArchKind::V6kz),
        (b"armv6-m", ArchKind::V6m),
        (b"armv7-a", ArchKind::V7a),
        (b"armv7ve", ArchKind::V7ve),
        (b"armv7-r", ArchKind::V7r),
        (b"armv7-m", ArchKind::V7m),
        (b"armv7e-m", ArchKind::V7em),
        (b"armv8-a", ArchKind::V8a),
        (b"armv8.1-a", ArchKind::V8_1a),
        (b"armv8.2-a", ArchKind::V8_2a),
        (b"armv8.3-a", ArchKind::V8_3a),
        (b"armv8.4-a", ArchKind::V8_4a),
        (b"armv8.5-a", ArchKind::V8_5a),
        (b"armv8.6-a", ArchKind::V8_6a),
        (b"armv8.7-a", ArchKind::V8_7a),
        (b"armv8.8-a", ArchKind::V8_8a),
        (b"armv8.9-a", ArchKind::V8_9a),
        (b"armv9-a", ArchKind::V9a),
        (b"armv9.1-a", ArchKind::V9_1a),
        (b"armv9.2-a", ArchKind::V9_2a),
        (b"armv9.3-a", ArchKind::V9_3a),
        (b"armv9.4-a", ArchKind::V9_4a),
        (b"armv9.5-a", ArchKind::V9_5a),
        (b"armv8-r", ArchKind::V8r),
        (b"armv8-m.base", ArchKind::V8mBaseline),
        (b"armv8-m.main", ArchKind::V8mMainline),
        (b"armv8.1-m.main", ArchKind::V8_1mMainline),
        (b"iwmmxt", ArchKind::Iwmmxt),
        (b"iwmmxt2", ArchKind::Iwmmxt2),
        (b"xscale", ArchKind::Xscale),
        (b"armv7s", ArchKind::V7s),
        (b"armv7k", ArchKind::V7k),
    ];

    /// LLVM 19's short spellings of ARM architecture versions and what they stand for.
    const SYNONYMS: &[(&[u8], &[u8])] = &[
        (b"v5", b"v5t"),
        (b"v5e", b"v5te"),
        (b"v6j", b"v6"),
        (b"v6hl", b"v6k"),
        (b"v6m", b"v6-m"),
        (b"v6sm", b"v6-m"),
        (b"v6s-m", b"v6-m"),
        (b"v6z", b"v6kz"),
        (b"v6zk", b"v6kz"),
        (b"v7", b"v7-a"),
        (b"v7a", b"v7-a"),
        (b"v7hl", b"v7-a"),
        (b"v7l", b"v7-a"),
        (b"v7r", b"v7-r"),
        (b"v7m", b"v7-m"),
        (b"v7em", b"v7e-m"),
        (b"v8", b"v8-a"),
        (b"v8a", b"v8-a"),
        (b"v8l", b"v8-a"),
        (b"aarch64", b"v8-a"),
        (b"arm64", b"v8-a"),
        (b"v8.1a", b"v8.1-a"),
        (b"v8.2a", b"v8.2-a"),
        (b"v8.3a", b"v8.3-a"),
        (b"v8.4a", b"v8.4-a"),
        (b"v8.5a", b"v8.5-a"),
        (b"v8.6a", b"v8.6-a"),
        (b"v8.7a", b"v8.7-a"),
        (b"v8.8a", b"v8.8-a"),
        (b"v8.9a", b"v8.9-a"),
        (b"v8r", b"v8-r"),
        (b"v9", b"v9-a"),
        (b"v9a", b"v9-a"),
        (b"v9.1a", b"v9.1-a"),
        (b"v9.2a", b"v9.2-a"),
        (b"v9.3a", b"v9.3-a"),
        (b"v9.4a", b"v9.4-a"),
        (b"v9.5a", b"v9.5-a"),
        (b"v8m.base", b"v8-m.base"),
        (b"v8m.main", b"v8-m.main"),
        (b"v8.1m.main", b"v8.1-m.main"),
    ];

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Isa {
        Arm,
        Thumb,
        Aarch64,
        Invalid,
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Endian {
        Little,
        Big,
        Invalid,
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack
            .windows(needle.len())
            .any(|window| window == needle)
    }

    /// `text[start..]`, empty when `start` is past the end (LLVM's clamping `substr`).
    fn tail(text: &[u8], start: usize) -> &[u8] {
        text.get(start..).unwrap_or_default()
    }

    /// LLVM's `ARM::getCanonicalArchName`: strips the `arm`/`thumb`/`aarch64`/`arm64` head and
    /// any `eb`, leaving the version part (`v7a`), a marketing name (`xscale`), the whole name
    /// when nothing is left, or empty when the name is malformed.
    pub(super) fn canonical_arch_name(arch: &[u8]) -> &[u8] {
        let mut offset = if arch.starts_with(b"arm64_32") {
            Some(8)
        } else if arch.starts_with(b"arm64e") {
            Some(6)
        } else if arch.starts_with(b"arm64") {
            Some(5)
        } else if arch.starts_with(b"aarch64_32") {
            Some(10)
        } else if arch.starts_with(b"arm") {
            Some(3)
        } else if arch.starts_with(b"thumb") {
            Some(5)
        } else if arch.starts_with(b"aarch64") {
            // AArch64 spells big-endian "_be"; an "eb" anywhere makes the name invalid.
            if contains(arch, b"eb") {
                return b"";
            }
            Some(if tail(arch, 7).starts_with(b"_be") {
                10
            } else {
                7
            })
        } else {
            None
        };
        let mut rest = arch;
        match offset {
            Some(start) if tail(rest, start).starts_with(b"eb") => offset = Some(start + 2),
            _ => rest = rest.strip_suffix(b"eb").unwrap_or(rest),
        }
        if let Some(start) = offset {
            rest = tail(rest, start);
        }
        if rest.is_empty() {
            return arch;
        }
        if offset.is_some() {
            let versioned = rest.len() < 2 || (rest[0] == b'v' && rest[1].is_ascii_digit());
            if !versioned || contains(rest, b"eb") {
                return b"";
            }
        }
        rest
    }

    fn synonym(name: &[u8]) -> &[u8] {
        SYNONYMS
            .iter()
            .find(|(short, _)| *short == name)
            .map_or(name, |&(_, long)| long)
    }

    /// LLVM's `ARM::parseArch`: canonicalise, expand the synonym, then take the first table
    /// entry whose name ends with it (so `v7-a` finds `armv7-a`).
    pub(super) fn parse_arch_kind(name: &[u8]) -> ArchKind {
        let wanted = synonym(canonical_arch_name(name));
        ARCH_KINDS
            .iter()
            .find(|(known, _)| known.ends_with(wanted))
            .map_or(ArchKind::Invalid, |&(_, kind)| kind)
    }

    fn parse_isa(name: &[u8]) -> Isa {
        if name.starts_with(b"aarch64") || name.starts_with(b"arm64") {
            Isa::Aarch64
        } else if name.starts_with(b"thumb") {
            Isa::Thumb
        } else if name.starts_with(b"arm") {
            Isa::Arm
        } else {
            Isa::Invalid
        }
    }

    fn parse_endian(name: &[u8]) -> Endian {
        if name.starts_with(b"armeb")
            || name.starts_with(b"thumbeb")
            || name.starts_with(b"aarch64_be")
        {
            return Endian::Big;
        }
        if name.starts_with(b"arm") || name.starts_with(b"thumb") {
            return if name.ends_with(b"eb") {
                Endian::Big
            } else {
                Endian::Little
            };
        }
        if name.starts_with(b"aarch64") {
            return Endian::Little;
        }
        Endian::Invalid
    }

    /// LLVM's `parseARMArch`: the architecture of an `arm*`, `thumb*` or `aarch64*` name that
    /// is not in the exact-name table.
    pub(super) fn parse_arch(name: &[u8]) -> Arch {
        let isa = parse_isa(name);
        let endian = parse_endian(name);
        let arch = match (isa, endian) {
            (Isa::Arm, Endian::Little) => Arch::Arm,
            (Isa::Thumb, Endian::Little) => Arch::Thumb,
            (Isa::Aarch64, Endian::Little) => Arch::Aarch64,
            (Isa::Arm, Endian::Big) => Arch::Armeb,
            (Isa::Thumb, Endian::Big) => Arch::Thumbeb,
            (Isa::Aarch64, Endian::Big) => Arch::Aarch64Be,
            _ => Arch::UnknownArch,
        };
        let version = canonical_arch_name(name);
        if version.is_empty() {
            return Arch::UnknownArch;
        }
        // Thumb starts at ARMv4.
        if isa == Isa::Thumb && (version.starts_with(b"v2") || version.starts_with(b"v3")) {
            return Arch::UnknownArch;
        }
        // ARMv6-M (the only M profile of version 6) has only Thumb.
        if parse_arch_kind(version) == ArchKind::V6m {
            return if endian == Endian::Big {
                Arch::Thumbeb
            } else {
                Arch::Thumb
            };
        }
        arch
    }

    /// The triple sub-architecture LLVM 19 assigns to an ARM architecture.
    pub(super) fn sub_arch(kind: ArchKind) -> SubArch {
        match kind {
            ArchKind::Invalid | ArchKind::V4 => SubArch::NoSubArch,
            ArchKind::V4t => SubArch::ArmV4t,
            ArchKind::V5t => SubArch::ArmV5,
            ArchKind::V5te
            | ArchKind::Iwmmxt
            | ArchKind::Iwmmxt2
            | ArchKind::Xscale
            | ArchKind::V5tej => SubArch::ArmV5te,
            ArchKind::V6 => SubArch::ArmV6,
            ArchKind::V6k | ArchKind::V6kz => SubArch::ArmV6k,
            ArchKind::V6t2 => SubArch::ArmV6t2,
            ArchKind::V6m => SubArch::ArmV6m,
            ArchKind::V7a | ArchKind::V7r => SubArch::ArmV7,
            ArchKind::V7ve => SubArch::ArmV7ve,
            ArchKind::V7k => SubArch::ArmV7k,
            ArchKind::V7m => SubArch::ArmV7m,
            ArchKind::V7s => SubArch::ArmV7s,
            ArchKind::V7em => SubArch::ArmV7em,
            ArchKind::V8a => SubArch::ArmV8,
            ArchKind::V8_1a => SubArch::ArmV8_1a,
            ArchKind::V8_2a => SubArch::ArmV8_2a,
            ArchKind::V8_3a => SubArch::ArmV8_3a,
            ArchKind::V8_4a => SubArch::ArmV8_4a,
            ArchKind::V8_5a => SubArch::ArmV8_5a,
            ArchKind::V8_6a => SubArch::ArmV8_6a,
            ArchKind::V8_7a => SubArch::ArmV8_7a,
            ArchKind::V8_8a => SubArch::ArmV8_8a,
            ArchKind::V8_9a => SubArch::ArmV8_9a,
            ArchKind::V9a => SubArch::ArmV9,
            ArchKind::V9_1a => SubArch::ArmV9_1a,
            ArchKind::V9_2a => SubArch::ArmV9_2a,
            ArchKind::V9_3a => SubArch::ArmV9_3a,
            ArchKind::V9_4a => SubArch::ArmV9_4a,
            ArchKind::V9_5a => SubArch::ArmV9_5a,
            ArchKind::V8r => SubArch::ArmV8r,
            ArchKind::V8mBaseline => SubArch::ArmV8mBaseline,
            ArchKind::V8mMainline => SubArch::ArmV8mMainline,
            ArchKind::V8_1mMainline => SubArch::ArmV8_1mMainline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The triple the bundler compares: the text split into pieces, rebuilt from four.
    fn bundler_triple(text: &str) -> Triple {
        let t = Triple::new(text);
        Triple::from_parts(
            t.arch_name(),
            t.vendor_name(),
            t.os_name(),
            t.environment_name(),
        )
    }

    fn arch_of(name: &str) -> Arch {
        Triple::new(name).arch()
    }

    #[test]
    fn exact_arch_names() {
        let cases = [
            ("x86_64", Arch::X86_64),
            ("amd64", Arch::X86_64),
            ("x86_64h", Arch::X86_64),
            ("i386", Arch::X86),
            ("i486", Arch::X86),
            ("i586", Arch::X86),
            ("i686", Arch::X86),
            ("aarch64", Arch::Aarch64),
            ("arm64", Arch::Aarch64),
            ("arm64_32", Arch::Aarch64_32),
            ("amdgcn", Arch::Amdgcn),
            ("r600", Arch::R600),
            ("nvptx64", Arch::Nvptx64),
            ("nvptx", Arch::Nvptx),
            ("spirv64", Arch::Spirv64),
            ("spirv64v1.3", Arch::Spirv64),
            ("riscv64", Arch::Riscv64),
            ("wasm32", Arch::Wasm32),
            ("powerpc64le", Arch::Ppc64le),
            ("s390x", Arch::Systemz),
            ("sparc64", Arch::Sparcv9),
            ("le32", Arch::Le32),
            ("xtensa", Arch::Xtensa),
            ("dxilv1.8", Arch::Dxil),
            ("kalimba", Arch::Kalimba),
            ("kalimbafoo", Arch::Kalimba),
        ];
        for (name, arch) in cases {
            assert_eq!(arch_of(name), arch, "{name}");
        }
    }

    #[test]
    fn unknown_arch_names() {
        for name in [
            "", "AMDGCN", "Amdgcn", "X86_64", "x86", "x86-64", "i1086", "pe", "gfx906",
        ] {
            assert_eq!(arch_of(name), Arch::UnknownArch, "{name:?}");
        }
        assert_eq!(arch_of("amdgcn-amd-amdhsa"), Arch::Amdgcn);
        assert_eq!(arch_of("AMDGCN-amd-amdhsa"), Arch::UnknownArch);
    }

    #[test]
    fn arm_names_go_through_the_arm_parser() {
        let cases = [
            ("armv7a", Arch::Arm, SubArch::ArmV7),
            ("armv7", Arch::Arm, SubArch::ArmV7),
            ("armv7r", Arch::Arm, SubArch::ArmV7),
            ("armv7l", Arch::Arm, SubArch::ArmV7),
            ("armv7m", Arch::Arm, SubArch::ArmV7m),
            ("armv7eb", Arch::Armeb, SubArch::ArmV7),
            ("armebv7", Arch::Armeb, SubArch::ArmV7),
            ("thumbv7", Arch::Thumb, SubArch::ArmV7),
            ("thumbv7em", Arch::Thumb, SubArch::ArmV7em),
            ("thumbebv7", Arch::Thumbeb, SubArch::ArmV7),
            ("armv6m", Arch::Thumb, SubArch::ArmV6m),
            ("armebv6m", Arch::Thumbeb, SubArch::ArmV6m),
            ("armv8l", Arch::Arm, SubArch::ArmV8),
            ("armv8.1m.main", Arch::Arm, SubArch::ArmV8_1mMainline),
            ("armv9.5a", Arch::Arm, SubArch::ArmV9_5a),
            // LLVM 19 does not know ARMv9.6-A: a valid ARM name without sub-architecture.
            ("armv9.6a", Arch::Arm, SubArch::NoSubArch),
            ("armv2", Arch::Arm, SubArch::NoSubArch),
            ("armx", Arch::Arm, SubArch::NoSubArch),
            ("xscale", Arch::Arm, SubArch::ArmV5te),
            ("arm64e", Arch::Aarch64, SubArch::Aarch64Arm64e),
            ("arm64ec", Arch::Aarch64, SubArch::Aarch64Arm64ec),
            ("arm64eb", Arch::Aarch64Be, SubArch::NoSubArch),
            ("aarch64v8a", Arch::Aarch64, SubArch::ArmV8),
            ("aarch64eb", Arch::UnknownArch, SubArch::NoSubArch),
            ("aarch64_be_v8", Arch::UnknownArch, SubArch::NoSubArch),
            ("thumbv2", Arch::UnknownArch, SubArch::NoSubArch),
            ("thumbv3m", Arch::UnknownArch, SubArch::NoSubArch),
            ("armvx", Arch::UnknownArch, SubArch::NoSubArch),
            ("armebv7eb", Arch::UnknownArch, SubArch::NoSubArch),
        ];
        for (name, arch, sub_arch) in cases {
            let t = Triple::new(name);
            assert_eq!((t.arch(), t.sub_arch()), (arch, sub_arch), "{name}");
        }
    }

    #[test]
    fn bpf_names() {
        let host_bpf = if cfg!(target_endian = "big") {
            Arch::Bpfeb
        } else {
            Arch::Bpfel
        };
        assert_eq!(arch_of("bpf"), host_bpf);
        assert_eq!(arch_of("bpfel"), Arch::Bpfel);
        assert_eq!(arch_of("bpf_le"), Arch::Bpfel);
        assert_eq!(arch_of("bpfeb"), Arch::Bpfeb);
        assert_eq!(arch_of("bpf_be"), Arch::Bpfeb);
        assert_eq!(arch_of("bpfx"), Arch::UnknownArch);
    }

    #[test]
    fn sub_arch_follows_the_name_not_the_arch() {
        let sub_arch = |name: &str| Triple::new(name).sub_arch();
        assert_eq!(sub_arch("spirv1.5"), SubArch::SpirvV1_5);
        assert_eq!(sub_arch("spirv64v1.0"), SubArch::SpirvV1_0);
        assert_eq!(sub_arch("spirv64"), SubArch::NoSubArch);
        // Not an architecture LLVM 19 accepts, yet it still gets a SPIR-V version.
        assert_eq!(arch_of("spirv1.4"), Arch::UnknownArch);
        assert_eq!(sub_arch("spirv1.4"), SubArch::SpirvV1_4);
        assert_eq!(sub_arch("dxilv1.3"), SubArch::DxilV1_3);
        assert_eq!(sub_arch("mipsisa64r6el"), SubArch::MipsR6);
        assert_eq!(sub_arch("powerpcspe"), SubArch::PpcSpe);
        assert_eq!(sub_arch("v7a"), SubArch::ArmV7);
        // The Kalimba rule is unreachable in LLVM 19: the ARM canonicaliser never empties
        // these names.
        assert_eq!(sub_arch("kalimba3"), SubArch::NoSubArch);
        assert_eq!(sub_arch("x86_64"), SubArch::NoSubArch);
    }

    #[test]
    fn vendor_is_an_exact_match() {
        let vendor = |text: &str| Triple::new(text).vendor();
        assert_eq!(vendor("x86_64-amd"), Vendor::Amd);
        assert_eq!(vendor("x86_64-sie-ps5"), Vendor::Scei);
        assert_eq!(vendor("x86_64-AMD"), Vendor::UnknownVendor);
        assert_eq!(vendor("x86_64-amdx"), Vendor::UnknownVendor);
        assert_eq!(vendor("x86_64-intel-linux"), Vendor::UnknownVendor);
        assert_eq!(vendor("x86_64-w64-windows-gnu"), Vendor::UnknownVendor);
    }

    #[test]
    fn os_is_a_prefix_match() {
        let os = |text: &str| Triple::new(text).os();
        assert_eq!(os("x86_64-apple-macosx10.15"), Os::MacOsx);
        assert_eq!(os("x86_64-apple-macos"), Os::MacOsx);
        assert_eq!(os("x86_64-apple-darwin23.1"), Os::Darwin);
        assert_eq!(os("x86_64-unknown-linuxfoo"), Os::Linux);
        assert_eq!(os("x86_64-pc-win32"), Os::Win32);
        assert_eq!(os("arm64-apple-visionos1"), Os::XrOs);
        assert_eq!(os("spirv-unknown-vulkan1.3"), Os::Vulkan);
        assert_eq!(os("amdgcn-amd-amdhsa5"), Os::AmdHsa);
        assert_eq!(os("x86_64-unknown-Linux"), Os::UnknownOs);
        assert_eq!(os("x86_64-w64-mingw32"), Os::UnknownOs);
        assert_eq!(os("x86_64-unknown"), Os::UnknownOs);
    }

    #[test]
    fn environment_is_a_prefix_match_in_llvm_order() {
        let env = |text: &str| Triple::new(text).environment();
        assert_eq!(env("x86_64-unknown-linux-gnu2.17"), Environment::Gnu);
        assert_eq!(env("x86_64-unknown-linux-gnu-elf"), Environment::Gnu);
        assert_eq!(env("arm-unknown-linux-gnueabihf"), Environment::GnuEabiHf);
        assert_eq!(
            env("arm-unknown-linux-gnueabihft64"),
            Environment::GnuEabiHfT64
        );
        assert_eq!(env("arm-unknown-linux-gnueabi"), Environment::GnuEabi);
        assert_eq!(env("x86_64-unknown-linux-gnut64"), Environment::GnuT64);
        assert_eq!(env("x86_64-unknown-linux-gnux32"), Environment::GnuX32);
        assert_eq!(env("mips64-unknown-linux-muslabi64"), Environment::Musl);
        assert_eq!(env("aarch64-unknown-linux-android21"), Environment::Android);
        assert_eq!(env("x86_64-pc-windows-msvc19.29"), Environment::Msvc);
        assert_eq!(
            env("x86_64-unknown-linux-GNU"),
            Environment::UnknownEnvironment
        );
        assert_eq!(
            env("x86_64-unknown-linux-llvm"),
            Environment::UnknownEnvironment
        );
        assert_eq!(
            env("x86_64-unknown-linux-elf"),
            Environment::UnknownEnvironment
        );
        assert_eq!(
            env("amdgcn-amd-amdhsa-unknown"),
            Environment::UnknownEnvironment
        );
        assert_eq!(env("amdgcn-amd-amdhsa"), Environment::UnknownEnvironment);
    }

    #[test]
    fn a_bare_mips_name_implies_its_gnu_environment() {
        let env = |text: &str| Triple::new(text).environment();
        assert_eq!(env("mips"), Environment::Gnu);
        assert_eq!(env("mipsisa32r6el"), Environment::Gnu);
        assert_eq!(env("mips64el"), Environment::GnuAbi64);
        assert_eq!(env("mipsisa64r6"), Environment::GnuAbi64);
        assert_eq!(env("mipsn32"), Environment::GnuAbiN32);
        assert_eq!(env("mipsallegrex"), Environment::UnknownEnvironment);
        // Only without any '-', and never through the four-piece constructor.
        assert_eq!(env("mips-"), Environment::UnknownEnvironment);
        assert_eq!(
            bundler_triple("mips").environment(),
            Environment::UnknownEnvironment
        );
    }

    #[test]
    fn object_format_from_the_environment_suffix() {
        let format = |text: &str| Triple::new(text).object_format();
        assert_eq!(format("x86_64-unknown-linux-elf"), ObjectFormat::Elf);
        assert_eq!(format("x86_64-unknown-linux-gnu-coff"), ObjectFormat::Coff);
        assert_eq!(format("powerpc64-ibm-aix-xcoff"), ObjectFormat::Xcoff);
        assert_eq!(format("s390x-ibm-zos-goff"), ObjectFormat::Goff);
        assert_eq!(format("x86_64-unknown-linux-macho"), ObjectFormat::MachO);
        assert_eq!(format("x86_64-unknown-linux-wasm"), ObjectFormat::Wasm);
        assert_eq!(format("x86_64-unknown-linux-spirv"), ObjectFormat::Spirv);
        // Not a format suffix in LLVM 19: the default applies.
        assert_eq!(
            format("x86_64-unknown-linux-dxcontainer"),
            ObjectFormat::Elf
        );
    }

    #[test]
    fn default_object_formats() {
        let cases = [
            ("x86_64-unknown-linux-gnu", ObjectFormat::Elf),
            ("x86_64", ObjectFormat::Elf),
            ("", ObjectFormat::Elf),
            ("x86_64-apple-macosx10.15", ObjectFormat::MachO),
            ("arm64-apple-ios", ObjectFormat::MachO),
            ("x86_64-apple-bridgeos", ObjectFormat::Elf),
            ("x86_64-pc-windows-msvc", ObjectFormat::Coff),
            ("aarch64-pc-windows-gnu", ObjectFormat::Coff),
            ("x86_64-unknown-uefi", ObjectFormat::Coff),
            ("mipsel-unknown-windows", ObjectFormat::Elf),
            ("powerpc64-ibm-aix", ObjectFormat::Xcoff),
            ("powerpc-apple-darwin", ObjectFormat::MachO),
            ("s390x-ibm-zos", ObjectFormat::Goff),
            ("s390x-ibm-linux", ObjectFormat::Elf),
            ("wasm32-unknown-wasi", ObjectFormat::Wasm),
            ("wasm64-unknown-windows", ObjectFormat::Wasm),
            ("spirv64-unknown-unknown", ObjectFormat::Spirv),
            ("spirv-unknown-vulkan1.2", ObjectFormat::Spirv),
            ("dxil-unknown-shadermodel6.0", ObjectFormat::DxContainer),
            ("amdgcn-amd-amdhsa", ObjectFormat::Elf),
            ("nvptx64-nvidia-cuda", ObjectFormat::Elf),
            ("armeb-apple-ios", ObjectFormat::Elf),
        ];
        for (text, format) in cases {
            assert_eq!(Triple::new(text).object_format(), format, "{text}");
        }
    }

    #[test]
    fn component_names_split_like_llvm() {
        let t = Triple::new("amdgcn-amd-amdhsa");
        assert_eq!(t.as_str(), "amdgcn-amd-amdhsa");
        assert_eq!(
            (
                t.arch_name(),
                t.vendor_name(),
                t.os_name(),
                t.environment_name()
            ),
            ("amdgcn", "amd", "amdhsa", "")
        );
        let t = Triple::new("a-b-c-d-e-f");
        assert_eq!(
            (
                t.arch_name(),
                t.vendor_name(),
                t.os_name(),
                t.environment_name()
            ),
            ("a", "b", "c", "d-e-f")
        );
        let t = Triple::new("x86_64");
        assert_eq!(
            (
                t.arch_name(),
                t.vendor_name(),
                t.os_name(),
                t.environment_name()
            ),
            ("x86_64", "", "", "")
        );
        let t = Triple::new("");
        assert_eq!(
            (
                t.arch_name(),
                t.vendor_name(),
                t.os_name(),
                t.environment_name()
            ),
            ("", "", "", "")
        );
        let t = Triple::new("---");
        assert_eq!(t.as_str(), "---");
        assert_eq!(t.environment_name(), "");
    }

    #[test]
    fn four_piece_rebuild_always_writes_four_pieces() {
        assert_eq!(
            bundler_triple("amdgcn-amd-amdhsa").as_str(),
            "amdgcn-amd-amdhsa-"
        );
        assert_eq!(bundler_triple("x86_64").as_str(), "x86_64---");
        assert_eq!(bundler_triple("").as_str(), "---");
        assert_eq!(
            bundler_triple("x86_64-unknown-linux-gnu").as_str(),
            "x86_64-unknown-linux-gnu"
        );
        assert_eq!(bundler_triple("a-b-c-d-e").as_str(), "a-b-c-d-e");
        let t = Triple::from_parts("amdgcn", "amd", "amdhsa", "");
        assert_eq!(t.to_string(), "amdgcn-amd-amdhsa-");
        assert_eq!(
            (t.arch(), t.vendor(), t.os()),
            (Arch::Amdgcn, Vendor::Amd, Os::AmdHsa)
        );
        assert_eq!(t.environment(), Environment::UnknownEnvironment);
    }

    #[test]
    fn from_parts_parses_each_piece_whole() {
        // The accessors re-split the joined text, but each component was parsed from its own
        // piece, as in LLVM.
        let t = Triple::from_parts("x86_64", "unknown", "linux", "gnu-elf");
        assert_eq!(t.environment_name(), "gnu-elf");
        assert_eq!(t.environment(), Environment::Gnu);
        let t = Triple::from_parts("amdgcn-amd", "amdhsa", "", "");
        assert_eq!(t.arch(), Arch::UnknownArch);
        assert_eq!(t.arch_name(), "amdgcn");
    }

    #[test]
    fn gpu_predicates() {
        let t = Triple::new("amdgcn-amd-amdhsa");
        assert!(t.is_amdgcn() && t.is_amdgpu() && !t.is_r600() && !t.is_nvptx());
        let t = Triple::new("r600-unknown-unknown");
        assert!(t.is_r600() && t.is_amdgpu() && !t.is_amdgcn());
        assert!(Triple::new("nvptx64-nvidia-cuda").is_nvptx());
        assert!(Triple::new("nvptx-nvidia-cuda").is_nvptx());
        let t = Triple::new("AMDGCN-amd-amdhsa");
        assert!(!t.is_amdgpu() && !t.is_nvptx());
    }

    #[test]
    fn compatibility_basics() {
        let compatible =
            |a: &str, b: &str| bundler_triple(a).is_compatible_with(&bundler_triple(b));
        assert!(compatible(
            "amdgcn-amd-amdhsa-",
            "amdgcn-amd-amdhsa-unknown"
        ));
        assert!(!compatible(
            "x86_64-pc-linux-gnu",
            "x86_64-unknown-linux-gnu"
        ));
        assert!(compatible(
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu2.17"
        ));
        assert!(compatible(
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu"
        ));
    }

    /// Pairs checked against clang-offload-bundler 19.1.7: an entry `openmp-<A>-sm_70` was
    /// bundled, then unbundled with target `openmp-<B>-sm_70`; `true` means it was found.
    #[test]
    fn compatibility_confirmed_with_clang_offload_bundler_19() {
        let cases = [
            (
                "armv7a-unknown-linux-gnueabihf",
                "thumbv7a-unknown-linux-gnueabihf",
                true,
            ),
            (
                "armv7a-unknown-linux-gnueabihf",
                "thumbv7m-unknown-linux-gnueabihf",
                false,
            ),
            (
                "armv7-unknown-linux-gnueabihf",
                "armv7a-unknown-linux-gnueabihf",
                true,
            ),
            (
                "armv7a-unknown-linux-gnueabihf",
                "armv7r-unknown-linux-gnueabihf",
                true,
            ),
            (
                "armebv7a-unknown-linux-gnueabihf",
                "thumbebv7a-unknown-linux-gnueabihf",
                true,
            ),
            (
                "armebv7a-unknown-linux-gnueabihf",
                "thumbv7a-unknown-linux-gnueabihf",
                false,
            ),
            (
                "armv7a-unknown-linux-gnueabihf",
                "thumbv7a-unknown-linux-gnueabi",
                false,
            ),
            ("armv7a-apple-ios-foo", "thumbv7a-apple-ios-elf", true),
            ("thumbv7s-apple-ios", "armv7s-apple-ios", true),
            (
                "armv7-unknown-linux-gnueabihf",
                "armv7l-unknown-linux-gnueabihf",
                true,
            ),
            (
                "armv8l-unknown-linux-gnueabihf",
                "armv8a-unknown-linux-gnueabihf",
                true,
            ),
            ("armv6m-none-eabi", "thumbv6m-none-eabi", true),
            (
                "xscale-unknown-linux-gnu",
                "armv5te-unknown-linux-gnu",
                true,
            ),
            ("aarch64-unknown-linux-gnu", "arm64-unknown-linux-gnu", true),
            ("arm64-apple-ios", "arm64e-apple-ios", false),
            (
                "aarch64-unknown-linux-gnu",
                "aarch64_be-unknown-linux-gnu",
                false,
            ),
            ("x86_64-apple-macosx10.15", "x86_64-apple-macosx11.0", true),
            ("x86_64-apple-macosx", "x86_64-apple-darwin", false),
            (
                "x86_64-apple-ios13.0-simulator",
                "x86_64-apple-ios13.0",
                true,
            ),
            ("x86_64-apple-macosx-elf", "x86_64-apple-macosx", true),
            ("x86_64-unknown-macosx-elf", "x86_64-unknown-macosx", false),
            ("x86_64-unknown-macosx-macho", "x86_64-unknown-macosx", true),
            ("x86_64-pc-windows-msvc", "x86_64-pc-windows-gnu", false),
            ("x86_64-pc-windows-msvc", "x86_64-pc-win32-msvc", true),
            ("x86_64-w64-windows-gnu", "x86_64-pc-windows-gnu", false),
            (
                "x86_64-pc-windows-msvc",
                "x86_64-pc-windows-msvc19.29",
                true,
            ),
            ("x86_64-pc-windows", "x86_64-pc-windows-coff", true),
            ("x86_64-pc-windows-elf", "x86_64-pc-windows", false),
            (
                "x86_64-pc-windows-msvc-elf",
                "x86_64-pc-windows-msvc",
                false,
            ),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-gnu2.17",
                true,
            ),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-gnux32",
                false,
            ),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-gnut64",
                false,
            ),
            (
                "x86_64-unknown-linux-musl",
                "x86_64-unknown-linux-muslabi64",
                true,
            ),
            (
                "x86_64-unknown-linux-android",
                "x86_64-unknown-linux-android21",
                true,
            ),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-gnu-elf",
                true,
            ),
            ("x86_64-unknown-linux-", "x86_64-unknown-linux-elf", true),
            ("x86_64-unknown-linux-", "x86_64-unknown-linux-coff", false),
            (
                "x86_64-unknown-linux-dxcontainer",
                "x86_64-unknown-linux-",
                true,
            ),
            (
                "x86_64-unknown-linux-llvm",
                "x86_64-unknown-linux-foo",
                true,
            ),
            ("x86_64-pc-linux-gnu", "x86_64-unknown-linux-gnu", false),
            ("x86_64-foo-linux-gnu", "x86_64-unknown-linux-gnu", true),
            ("x86_64-intel-linux-gnu", "x86_64-unknown-linux-gnu", true),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linuxfoo-gnu",
                true,
            ),
            ("x86_64-unknown-linux-gnu", "amd64-unknown-linux-gnu", true),
            ("i386-pc-linux-gnu", "i686-pc-linux-gnu", true),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64h-unknown-linux-gnu",
                true,
            ),
            ("amdgcn-amd-amdhsa-", "amdgcn-amd-amdhsa-unknown", true),
            ("amdgcn-amd-amdhsa-", "amdgcn-amd-amdhsa-gnu", false),
            ("amdgcn-amd-amdhsa", "amdgcn-amd-amdhsa5", true),
            ("amdgcn-amd-amdpal", "amdgcn-amd-amdhsa", false),
            ("nvptx64-nvidia-cuda", "nvptx64-unknown-cuda", false),
            ("nvptx64-nvidia-cuda", "nvptx-nvidia-cuda", false),
            (
                "spirv64-unknown-unknown",
                "spirv64v1.0-unknown-unknown",
                false,
            ),
            ("spirv-unknown-vulkan1.2", "spirv1.5-unknown-vulkan", false),
            ("x86_64-unknown-uefi", "x86_64-unknown-uefi-coff", true),
            (
                "mipsel-unknown-windows",
                "mipsel-unknown-windows-coff",
                false,
            ),
            ("powerpc64-ibm-aix", "powerpc64-ibm-aix-xcoff", true),
            ("s390x-ibm-zos", "s390x-ibm-zos-goff", true),
            (
                "wasm32-unknown-unknown",
                "wasm32-unknown-unknown-wasm",
                true,
            ),
            ("kalimba3-unknown-unknown", "kalimba5-unknown-unknown", true),
            ("bpf-unknown-none", "bpfel-unknown-none", true),
            ("thumbv7em-none-eabihf", "thumbv7m-none-eabihf", false),
            (
                "armv9.6a-unknown-linux-gnu",
                "armv9.7a-unknown-linux-gnu",
                true,
            ),
            (
                "armv9.5a-unknown-linux-gnu",
                "armv9.4a-unknown-linux-gnu",
                false,
            ),
            ("arm-unknown-linux-gnu", "armv4-unknown-linux-gnu", true),
            (
                "x86_64-unknown-linux-gnu",
                "x86_64-unknown-linux-gnu-foo-bar",
                true,
            ),
            (
                "x86_64-unknown-linux-gnueabihf",
                "x86_64-unknown-linux-gnueabihft64",
                false,
            ),
            ("arm64-apple-macosx", "aarch64-apple-macosx-foo", true),
            ("arm64_32-apple-watchos", "aarch64_32-apple-watchos", true),
            ("thumbv7k-apple-watchos", "armv7k-apple-watchos", true),
            (
                "x86_64-unknown-bridgeos",
                "x86_64-unknown-bridgeos-elf",
                true,
            ),
            ("x86_64-unknown-ios", "x86_64-unknown-ios-elf", false),
            ("x86_64-apple-linux-gnu", "x86_64-apple-linux-musl", true),
            ("x86_64-unknown-Linux-gnu", "x86_64-unknown-foo-gnu", true),
            ("x86_64-unknown-linux-GNU", "x86_64-unknown-linux-", true),
            ("x86_64", "x86_64-unknown", true),
            ("x86_64-pc", "x86_64-pc-unknown-unknown", true),
            (
                "mips64-unknown-linux",
                "mips64-unknown-linux-gnuabi64",
                false,
            ),
        ];
        for (entry, target, expected) in cases {
            let found = bundler_triple(entry).is_compatible_with(&bundler_triple(target));
            assert_eq!(found, expected, "entry {entry} / target {target}");
        }
    }

    /// Triples checked against clang-offload-bundler 19.1.7 (`-targets=host-<triple>`):
    /// `false` means it reported `unknown target triple`.
    #[test]
    fn validity_confirmed_with_clang_offload_bundler_19() {
        let cases = [
            ("AMDGCN-amd-amdhsa", false),
            ("amdgcn-amd-amdhsa", true),
            ("x86_64", true),
            ("armv2-unknown-linux", true),
            ("thumbv2-unknown-linux", false),
            ("thumbv3m-none-eabi", false),
            ("thumbv4t-none-eabi", true),
            ("armx-unknown-linux", true),
            ("aarch64eb-unknown-linux", false),
            ("arm64eb-apple-ios", true),
            ("pe-unknown-unknown", false),
            ("le32-unknown-nacl", true),
            ("bpf-unknown-none", true),
            ("bpfx-unknown-none", false),
            ("kalimbafoo-unknown-unknown", true),
            ("spirv1.4-unknown-unknown", false),
            ("spirv1.5-unknown-unknown", true),
            ("dxilv1.9-unknown-shadermodel", false),
            ("dxilv1.8-unknown-shadermodel", true),
            ("i986-pc-linux", true),
            ("i1086-pc-linux", false),
            ("x86-64-unknown-linux", false),
            ("armebv7eb-unknown-linux", false),
            ("armv7eb-unknown-linux", true),
            ("thumbv7m-none-eabi", true),
            ("aarch64_be_v8-unknown-linux", false),
            ("aarch64v8a-unknown-linux", true),
            ("Amdgcn-amd-amdhsa", false),
            ("nvptx64-nvidia-cuda", true),
            ("riscv64-unknown-linux-gnu", true),
            ("wasm32-unknown-wasi", true),
            ("xtensa-unknown-unknown", true),
            ("arm64_32eb-apple-watchos", true),
            ("armv9.9z-unknown-linux", true),
            ("armvx-unknown-linux", false),
            ("ärm-unknown-linux", false),
        ];
        for (text, valid) in cases {
            let known = bundler_triple(text).arch() != Arch::UnknownArch;
            assert_eq!(known, valid, "{text}");
        }
    }

    #[test]
    fn no_input_panics() {
        let inputs = [
            "",
            "-",
            "--",
            "---",
            "----",
            "-----------",
            "é",
            "ä-ö-ü-ß",
            "arm\u{e9}",
            "thumb\u{e9}",
            "aarch64\u{e9}",
            "arm64e\u{e9}",
            "arm\u{e9}b",
            "armv7\u{e9}eb",
            "aarch64_b\u{e9}",
            "eb",
            "armeb",
            "thumbeb",
            "aarch64_be",
            "arm64_32eb",
            "a\u{0}b",
            "\u{1F600}-x-y-z",
            "spirv\u{e9}",
            "dxil\u{e9}v1.0",
            "mips\u{e9}r6",
            "bpf\u{e9}",
        ];
        for text in inputs {
            let t = Triple::new(text);
            let _ = bundler_triple(text).is_compatible_with(&t);
            let _ = (
                t.arch_name(),
                t.vendor_name(),
                t.os_name(),
                t.environment_name(),
            );
        }
    }
}
