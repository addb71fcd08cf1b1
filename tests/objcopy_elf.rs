//! Sections added to and removed from ELF objects give the bytes llvm-objcopy-19 gives.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::{first_difference, samples_dir, visible, CountingSink};
use offload::host::objcopy::{add_sections, remove_sections, AddedSection};

const PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

fn elf_objects() -> Vec<PathBuf> {
    let s = samples_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(s.join("elf"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    files.sort();
    for extra in [
        "host/vadd.o",
        "host/kernel.o",
        "clang/omp.o",
        "clang/kernel-fatbin.o",
        "clang/vadd-rdc.o",
        "archive/kernel-rdc.o",
        "archive/plain-host.o",
        "bundles/vadd-fat.o",
    ] {
        files.push(s.join(extra));
    }
    files
}

fn objcopy(tool: &Path, args: &[String], input: &Path, out: &Path) -> Vec<u8> {
    let status = Command::new(tool)
        .args(args)
        .arg("--")
        .arg(input)
        .arg(out)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "{} {args:?} {}",
        tool.display(),
        input.display()
    );
    std::fs::read(out).unwrap()
}

fn check(name: &str, expected: &[u8], ours: &[u8], failures: &mut Vec<String>) {
    if expected != ours {
        failures.push(format!("{name}: {}", first_difference(expected, ours)));
    }
}

#[test]
fn adding_and_removing_sections_matches_llvm_objcopy() {
    let Some(tool) = util::tool("llvm-objcopy-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let host_marker = dir.path().join("host.tmp");
    std::fs::write(&host_marker, [0u8]).unwrap();
    let s = samples_dir();
    let device = [
        (
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            s.join("dev/vadd-gfx906.hsaco"),
        ),
        (
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            s.join("dev/vadd-gfx90a.hsaco"),
        ),
    ];
    let device_data: Vec<Vec<u8>> = device
        .iter()
        .map(|(_, p)| std::fs::read(p).unwrap())
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for input in elf_objects() {
        let bytes = std::fs::read(&input).unwrap();
        let name = input.strip_prefix(&s).unwrap().display().to_string();
        let host_name = format!("{PREFIX}host-x86_64-unknown-linux-gnu-");
        let mut args = vec![
            format!("--add-section={host_name}={}", host_marker.display()),
            format!("--set-section-flags={host_name}=readonly,exclude"),
        ];
        let mut names = vec![host_name.clone()];
        for (id, path) in &device {
            let section = format!("{PREFIX}{id}");
            args.push(format!("--add-section={section}={}", path.display()));
            args.push(format!("--set-section-flags={section}=readonly,exclude"));
            names.push(section);
        }
        let fat_path = dir.path().join("fat.o");
        let expected = objcopy(&tool, &args, &input, &fat_path);
        let mut added = vec![AddedSection {
            name: &names[0],
            data: &[0],
        }];
        for (k, data) in device_data.iter().enumerate() {
            added.push(AddedSection {
                name: &names[k + 1],
                data,
            });
        }
        match add_sections(&bytes, &added) {
            Ok(ours) => check(
                &format!("add to {name}"),
                &expected,
                &ours.to_vec(),
                &mut failures,
            ),
            Err(e) => failures.push(format!("add to {name}: {e}")),
        }

        let removal = [
            "--regex".to_string(),
            format!("--remove-section={PREFIX}.*"),
        ];
        let thin_path = dir.path().join("thin.o");
        for (what, source) in [("original", input.as_path()), ("fat", fat_path.as_path())] {
            let expected = objcopy(&tool, &removal, source, &thin_path);
            let source_bytes = std::fs::read(source).unwrap();
            match remove_sections(&source_bytes, &|n| n.starts_with(PREFIX.as_bytes())) {
                Ok(ours) => check(
                    &format!("remove from {what} {name}"),
                    &expected,
                    &ours.to_vec(),
                    &mut failures,
                ),
                Err(e) => failures.push(format!("remove from {what} {name}: {e}")),
            }
        }
        checked += 1;
    }
    visible(&format!(
        "objcopy (ELF): {checked} objects, {} differences",
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn removing_a_section_takes_its_relocations_and_renumbers_links() {
    let Some(tool) = util::tool("llvm-objcopy-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for input in elf_objects() {
        let bytes = std::fs::read(&input).unwrap();
        // A section in the middle, with relocations and no symbols of its own: .eh_frame.
        let file = object::File::parse(&*bytes).unwrap();
        use object::{Object, ObjectSection, ObjectSymbol};
        let Some(eh) = file.section_by_name(".eh_frame") else {
            continue;
        };
        if file
            .symbols()
            .any(|s| s.section_index() == Some(eh.index()))
        {
            continue;
        }
        let out = dir.path().join("out.o");
        let expected = objcopy(&tool, &["--remove-section=.eh_frame".into()], &input, &out);
        let name = input.display().to_string();
        match remove_sections(&bytes, &|n| n == b".eh_frame") {
            Ok(ours) => check(&name, &expected, &ours.to_vec(), &mut failures),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        checked += 1;
    }
    assert!(
        checked >= 8,
        "only {checked} objects have a removable .eh_frame"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn damaged_objects_give_errors_not_panics() {
    let s = samples_dir();
    let bytes = std::fs::read(s.join("elf/cxx-x86_64-linux-gnu.o")).unwrap();
    let added = [AddedSection {
        name: "__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-",
        data: &[0],
    }];
    let mut errors = 0;
    for len in 0..bytes.len() {
        if add_sections(&bytes[..len], &added).is_err() {
            errors += 1;
        }
    }
    // Every cut that loses the section header table at the end is an error.
    assert!(
        errors > bytes.len() / 2,
        "{errors} errors for {} cuts",
        bytes.len()
    );
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        let mut damaged = bytes.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] ^= (state >> 32) as u8 | 1;
        }
        if let Ok(out) = add_sections(&damaged, &added) {
            let mut counted = CountingSink(0);
            out.write_with(&mut counted, |o, d| o.write_all(d)).unwrap();
            assert_eq!(counted.0, out.size);
        }
        let _ = remove_sections(&damaged, &|n| n.starts_with(PREFIX.as_bytes()));
    }
}
