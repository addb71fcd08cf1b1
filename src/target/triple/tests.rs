//! Tests of triple parsing and compatibility against LLVM 19's behaviour.

use crate::target::triple::*;

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
    let compatible = |a: &str, b: &str| bundler_triple(a).is_compatible_with(&bundler_triple(b));
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
