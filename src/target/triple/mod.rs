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
//!
//! # Example
//!
//! ```
//! use offload::target::triple::{Arch, Triple};
//!
//! let amdgpu = Triple::new("amdgcn-amd-amdhsa");
//! assert_eq!(amdgpu.arch(), Arch::Amdgcn);
//! assert_eq!(amdgpu.os_name(), "amdhsa");
//! assert!(amdgpu.is_amdgpu() && !amdgpu.is_nvptx());
//!
//! // Compatibility compares the parsed pieces: an empty environment matches `unknown`.
//! assert!(amdgpu.is_compatible_with(&Triple::new("amdgcn-amd-amdhsa-unknown")));
//! assert!(!amdgpu.is_compatible_with(&Triple::new("nvptx64-nvidia-cuda")));
//! assert_eq!(Triple::new("not-a-triple").arch(), Arch::UnknownArch);
//! ```

use std::fmt;

mod arm;

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

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests;
