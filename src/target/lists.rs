//! The lists of targets users already write, read as requirements: our target IDs
//! (`gfx90a:xnack-`, `sm_90a`, `compute_90`), PyTorch's `TORCH_CUDA_ARCH_LIST` (`8.0;9.0+PTX`,
//! `8.6 9.0a`, names such as `Ampere`) and `PYTORCH_ROCM_ARCH`, and CMake's
//! `CMAKE_CUDA_ARCHITECTURES` (`80-real;90-virtual`, `90a`) and `CMAKE_HIP_ARCHITECTURES`
//! (`gfx90a;gfx942`). Each form keeps its meaning: PyTorch's `8.0` asks for sm_80 code,
//! `+PTX` for PTX too; CMake's plain `80` asks for both, `-real` for the code alone,
//! `-virtual` for the PTX alone.
//!
//! # Example
//!
//! ```
//! use offload::target::lists::{requirements, Requirement};
//!
//! let torch = requirements("8.0;9.0+PTX").unwrap();
//! assert_eq!(torch[0], Requirement { written: "8.0".into(), target: "sm_80".into(), code: true, ptx: false });
//! assert_eq!(torch[1], Requirement { written: "9.0+PTX".into(), target: "sm_90".into(), code: true, ptx: true });
//! let cmake = requirements("80-real;90-virtual").unwrap();
//! assert_eq!((cmake[0].code, cmake[0].ptx, cmake[1].code, cmake[1].ptx), (true, false, false, true));
//! let rocm = requirements("gfx90a gfx942,gfx1100").unwrap();
//! assert_eq!(rocm.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(), ["gfx90a", "gfx942", "gfx1100"]);
//! assert!(requirements("all-major").is_err());
//! ```

/// One target a list asks for, and what of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The item as written (`9.0+PTX`, `80-real`, `gfx90a`).
    pub written: String,
    /// The device it is checked as: an AMD target ID, or a CUDA `sm_XY` (`sm_90a`).
    pub target: String,
    /// Whether code the device loads without compiling must be there (an AMD target's code
    /// object, native or generic; a cubin the CUDA driver loads on the SM).
    pub code: bool,
    /// Whether PTX the device can compile must be there (CUDA only).
    pub ptx: bool,
}

/// PyTorch's named architectures, as `TORCH_CUDA_ARCH_LIST` spells them out.
const NAMED: &[(&str, &str)] = &[
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
];

/// The requirements of `list`: items separated by `;`, `,` or spaces, each in one of the forms
/// the module names. An item of no form (or CMake's `all`, `all-major`, `native`, which name no
/// fixed list) is an error naming it.
pub fn requirements(list: &str) -> Result<Vec<Requirement>, String> {
    let mut out = Vec::new();
    for item in list
        .split([';', ',', ' ', '\t', '\n'])
        .filter(|i| !i.is_empty())
    {
        if let Some((_, spelt)) = NAMED.iter().find(|(name, _)| *name == item) {
            for mut r in requirements(spelt)? {
                r.written = format!("{item} ({})", r.written);
                out.push(r);
            }
            continue;
        }
        out.push(requirement(item)?);
    }
    if out.is_empty() {
        return Err("no target in the list".to_string());
    }
    Ok(out)
}

/// One item.
fn requirement(item: &str) -> Result<Requirement, String> {
    let made = |target: String, code: bool, ptx: bool| Requirement {
        written: item.to_string(),
        target,
        code,
        ptx,
    };
    if matches!(item, "all" | "all-major" | "native") {
        return Err(format!(
            "'{item}' names no fixed list of targets (CMake works it out when it builds): name them"
        ));
    }
    if item.starts_with("gfx") {
        return Ok(made(item.to_string(), true, false));
    }
    if let Some(sm) = item.strip_prefix("sm_") {
        return cuda(sm)
            .map(|sm| made(format!("sm_{sm}"), true, false))
            .ok_or_else(|| unknown(item));
    }
    if let Some(sm) = item.strip_prefix("compute_") {
        return cuda(sm)
            .map(|sm| made(format!("sm_{sm}"), false, true))
            .ok_or_else(|| unknown(item));
    }
    // PyTorch: MAJOR.MINOR[a|f][+PTX].
    let (version, ptx) = match item.strip_suffix("+PTX") {
        Some(version) => (version, true),
        None => (item, false),
    };
    if let Some((major, minor)) = version.split_once('.') {
        let sm = format!("{major}{minor}");
        return cuda(&sm)
            .map(|sm| made(format!("sm_{sm}"), true, ptx))
            .ok_or_else(|| unknown(item));
    }
    // CMake: NN[a|f][-real|-virtual].
    let (sm, code, ptx) = if let Some(sm) = item.strip_suffix("-real") {
        (sm, true, false)
    } else if let Some(sm) = item.strip_suffix("-virtual") {
        (sm, false, true)
    } else {
        (item, true, true)
    };
    cuda(sm)
        .map(|sm| made(format!("sm_{sm}"), code, ptx))
        .ok_or_else(|| unknown(item))
}

/// `sm` (`90`, `90a`, `100f`) when it is a CUDA compute capability's digits and suffix.
fn cuda(sm: &str) -> Option<String> {
    let digits = sm.trim_end_matches(['a', 'f']);
    let fine = (2..=3).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && sm.len() - digits.len() <= 1;
    fine.then(|| sm.to_string())
}

fn unknown(item: &str) -> String {
    format!(
        "'{item}' is not a target: give target IDs (gfx90a, sm_90), TORCH_CUDA_ARCH_LIST items \
         (8.0, 9.0+PTX), or CMake architectures (80-real, 90-virtual)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_keeps_its_meaning() {
        let got = |list: &str| {
            requirements(list)
                .unwrap()
                .into_iter()
                .map(|r| (r.target, r.code, r.ptx))
                .collect::<Vec<_>>()
        };
        let r = |t: &str, code, ptx| (t.to_string(), code, ptx);
        assert_eq!(
            got("8.6 9.0a"),
            [r("sm_86", true, false), r("sm_90a", true, false)]
        );
        assert_eq!(
            got("80;90a"),
            [r("sm_80", true, true), r("sm_90a", true, true)]
        );
        assert_eq!(
            got("sm_120,compute_90"),
            [r("sm_120", true, false), r("sm_90", false, true)]
        );
        assert_eq!(got("10.0f+PTX"), [r("sm_100f", true, true)]);
        assert_eq!(
            got("Ampere"),
            [r("sm_80", true, false), r("sm_86", true, true)]
        );
        assert_eq!(
            requirements("Ampere").unwrap().get(1).unwrap().written,
            "Ampere (8.6+PTX)"
        );
        assert_eq!(
            got("gfx90a:xnack-;gfx11-generic"),
            [
                r("gfx90a:xnack-", true, false),
                r("gfx11-generic", true, false)
            ]
        );
        for bad in ["8", "9.0+ptx", "sm_9", "native", "", "  ; "] {
            assert!(requirements(bad).is_err(), "{bad}");
        }
    }
}
