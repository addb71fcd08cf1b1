//! What `offload check` says of binaries split by kpack: per file and device, the archive
//! each code object is found in, or every path searched; the code objects a device finds
//! nothing for, and what the loader then answers the runtime.

use crate::ops::check::{Device, FileReport, KpackFile, KpackLoad};
use crate::ops::support::columns::ranges;

/// The code objects of `kpack` whose loads for `device` are alike by `same` (in order of
/// first appearance): one load of each group and the indices in it.
fn groups<K: PartialEq>(
    kpack: &KpackFile,
    device: usize,
    same: impl Fn(&KpackLoad) -> K,
) -> Vec<(&KpackLoad, Vec<usize>)> {
    let mut groups: Vec<(&KpackLoad, K, Vec<usize>)> = Vec::new();
    for co in &kpack.code_objects {
        let Some(load) = co.loads.get(device) else {
            continue;
        };
        let index = usize::try_from(co.index).unwrap_or(usize::MAX);
        let key = same(load);
        match groups.iter_mut().find(|(_, k, _)| *k == key) {
            Some((_, _, indices)) => indices.push(index),
            None => groups.push((load, key, vec![index])),
        }
    }
    groups.into_iter().map(|(l, _, i)| (l, i)).collect()
}

/// "code object 3" or "code objects 0-2, 5".
fn code_objects_phrase(indices: &[usize]) -> String {
    let noun = if indices.len() == 1 {
        "code object"
    } else {
        "code objects"
    };
    format!("{noun} {}", ranges(indices))
}

/// The name of device `index` of `devices`.
fn device_name(devices: &[Device], index: usize) -> String {
    devices
        .get(index)
        .map_or_else(String::new, |d| d.target_id.clone())
}

/// The devices' finds in `file` when it is a split binary, for people: per device, the code
/// objects found alike (in the same archive, or nowhere after the same search).
pub fn text(devices: &[Device], file: &FileReport) -> String {
    let mut out = String::new();
    let Some(kpack) = &file.kpack else {
        return out;
    };
    out.push_str(&format!(
        "  {}: {} code object{}, keyed {}#N, searched at {}\n",
        crate::io::shown(&file.path),
        kpack.code_objects.len(),
        if kpack.code_objects.len() == 1 {
            ""
        } else {
            "s"
        },
        crate::io::shown(&kpack.kernel_name),
        crate::io::shown(&kpack.search_paths.join(", "))
    ));
    for device in devices {
        let alike = groups(kpack, device.index, |l| {
            (
                l.archive.clone(),
                l.arch.clone(),
                l.why.clone(),
                l.searched.clone(),
            )
        });
        for (load, indices) in alike {
            let head = format!(
                "    {} (device {}): {}",
                device.target_id,
                device.index,
                code_objects_phrase(&indices)
            );
            match (&load.archive, &load.arch) {
                (Some(archive), Some(arch)) => {
                    let how = match load.loads {
                        "generic" => " (generic target code)",
                        _ => "",
                    };
                    let archive = crate::io::shown(archive);
                    out.push_str(&format!("{head}: {archive} [{arch}]{how}\n"));
                }
                _ => {
                    let why = load.why.as_deref().unwrap_or("not found");
                    out.push_str(&format!("{head}: nothing: {why}\n"));
                    if !load.searched.is_empty() {
                        out.push_str("      searched:\n");
                    }
                    for s in &load.searched {
                        let path = crate::io::shown(&s.path);
                        out.push_str(&format!("        {path} ({})\n", s.found));
                    }
                }
            }
        }
    }
    out
}

/// The code objects of `file` (a split binary) `device` finds nothing for.
pub fn without_code(device: &Device, file: &FileReport) -> String {
    let mut out = String::new();
    let Some(kpack) = &file.kpack else {
        return out;
    };
    let lacking: Vec<usize> = groups(kpack, device.index, |l| l.loads == "nothing")
        .into_iter()
        .filter(|(l, _)| l.loads == "nothing")
        .flat_map(|(_, indices)| indices)
        .collect();
    if lacking.is_empty() {
        return out;
    }
    out.push_str(&format!(
        "  {} (device {}): {} {} of {}: the kpack loader finds {}\n",
        device.target_id,
        device.index,
        crate::io::shown(&file.path),
        code_objects_phrase(&lacking),
        kpack.code_objects.len(),
        if lacking.len() == 1 {
            "it nowhere"
        } else {
            "none of them"
        },
    ));
    out
}

/// What the loader answers the runtime for the code objects of `file` (a split binary) a
/// device finds nothing for.
pub fn consequences(devices: &[Device], file: &FileReport) -> String {
    let mut out = String::new();
    let Some(kpack) = &file.kpack else {
        return out;
    };
    for device in devices {
        let answers = groups(kpack, device.index, |l| l.loader);
        for (load, indices) in answers.iter().filter(|(l, _)| l.loads == "nothing") {
            out.push_str(&format!(
                "  {} {}: the kpack loader answers {} for {}: the runtime gets no code for \
                 that device.\n",
                crate::io::shown(&file.path),
                code_objects_phrase(indices),
                load.loader,
                device_name(devices, device.index),
            ));
        }
    }
    out
}
