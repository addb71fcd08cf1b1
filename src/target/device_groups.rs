//! AMD's device package groups: the processors a per-device package is made for, and the
//! sub-families and families that gather them, as `rocm-bootstrap` (0.3.0) names and chains
//! them. A package for `gfx1100` is `PREFIX-gfx1100`; it depends on the packages of its
//! sub-family (`gfx110x`) and family (`gfx11`) when they exist. Generic targets belong to the
//! group whose LLVM generic target they are (`gfx11-generic` to the family `gfx11`), so that a
//! device finds their code by installing its own chain.
//!
//! # Example
//!
//! ```
//! use offload::target::device_groups::{self, Level};
//!
//! let chain = device_groups::chain("gfx1100").unwrap();
//! let keys: Vec<&str> = chain.iter().map(|g| g.key).collect();
//! assert_eq!(keys, ["gfx1100", "gfx110x", "gfx11"]);
//! let group = device_groups::group_of("gfx942:sramecc+:xnack-").unwrap();
//! assert_eq!((group.key, group.level), ("gfx942", Level::Target));
//! let generic = device_groups::group_of("gfx11-generic").unwrap();
//! assert_eq!((generic.key, generic.level), ("gfx11", Level::Family));
//! assert_eq!(device_groups::dist_name("amd-torch-device", generic), "amd-torch-device-gfx11");
//! let sub = device_groups::lookup("gfx12_0").unwrap();
//! assert_eq!(device_groups::dist_name("amd-torch-device", sub), "amd-torch-device-gfx12-0");
//! ```

/// How wide a group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A processor family (`gfx11`).
    Family,
    /// A sub-family (`gfx110x`, `gfx9_4`).
    SubFamily,
    /// One processor (`gfx1100`; `gfx1250` also holds `gfx1250-strict`).
    Target,
}

impl Level {
    /// The level as `rocm-bootstrap` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Family => "family",
            Level::SubFamily => "sub_family",
            Level::Target => "target",
        }
    }
}

/// One group: its key, its level, the name shown for it, the LLVM generic target whose code it
/// carries (if any), and its processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// The key (`gfx942`, `gfx9_4`, `gfx9`).
    pub key: &'static str,
    /// Target, sub-family or family.
    pub level: Level,
    /// The name shown for it (a target's is its key).
    pub display: &'static str,
    /// The LLVM generic target whose code goes in its package.
    pub generic: Option<&'static str>,
    /// Its processors.
    pub members: &'static [&'static str],
}

/// A processor: its name, the target group holding it, its sub-family and its family.
struct Row {
    processor: &'static str,
    target: &'static str,
    sub_family: &'static str,
    family: &'static str,
}

const fn row(
    processor: &'static str,
    target: &'static str,
    sub_family: &'static str,
    family: &'static str,
) -> Row {
    Row {
        processor,
        target,
        sub_family,
        family,
    }
}

/// Every processor with a package, in `rocm-bootstrap`'s order.
const ROWS: &[Row] = &[
    row("gfx900", "gfx900", "gfx9_0", "gfx9"),
    row("gfx902", "gfx902", "gfx9_0", "gfx9"),
    row("gfx904", "gfx904", "gfx9_0", "gfx9"),
    row("gfx906", "gfx906", "gfx9_0", "gfx9"),
    row("gfx908", "gfx908", "gfx9_0", "gfx9"),
    row("gfx909", "gfx909", "gfx9_0", "gfx9"),
    row("gfx90a", "gfx90a", "gfx9_0", "gfx9"),
    row("gfx90c", "gfx90c", "gfx9_0", "gfx9"),
    row("gfx942", "gfx942", "gfx9_4", "gfx9"),
    row("gfx950", "gfx950", "gfx9_5", "gfx9"),
    row("gfx1010", "gfx1010", "gfx10_1", "gfx10"),
    row("gfx1011", "gfx1011", "gfx10_1", "gfx10"),
    row("gfx1012", "gfx1012", "gfx10_1", "gfx10"),
    row("gfx1013", "gfx1013", "gfx10_1", "gfx10"),
    row("gfx1030", "gfx1030", "gfx10_3", "gfx10"),
    row("gfx1031", "gfx1031", "gfx10_3", "gfx10"),
    row("gfx1032", "gfx1032", "gfx10_3", "gfx10"),
    row("gfx1033", "gfx1033", "gfx10_3", "gfx10"),
    row("gfx1034", "gfx1034", "gfx10_3", "gfx10"),
    row("gfx1035", "gfx1035", "gfx10_3", "gfx10"),
    row("gfx1036", "gfx1036", "gfx10_3", "gfx10"),
    row("gfx1100", "gfx1100", "gfx110x", "gfx11"),
    row("gfx1101", "gfx1101", "gfx110x", "gfx11"),
    row("gfx1102", "gfx1102", "gfx110x", "gfx11"),
    row("gfx1103", "gfx1103", "gfx110x", "gfx11"),
    row("gfx1150", "gfx1150", "gfx115x", "gfx11"),
    row("gfx1151", "gfx1151", "gfx115x", "gfx11"),
    row("gfx1152", "gfx1152", "gfx115x", "gfx11"),
    row("gfx1153", "gfx1153", "gfx115x", "gfx11"),
    row("gfx1200", "gfx1200", "gfx12_0", "gfx12"),
    row("gfx1201", "gfx1201", "gfx12_0", "gfx12"),
    row("gfx1250", "gfx1250", "gfx12_5", "gfx12"),
    row("gfx1250-strict", "gfx1250", "gfx12_5", "gfx12"),
    row("gfx1251", "gfx1251", "gfx12_5", "gfx12"),
];

/// The sub-families and families: key, level, name shown, generic target, members.
const WIDE: &[Group] = &[
    wide(
        "gfx9",
        Level::Family,
        "GFX9",
        None,
        &[
            "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
            "gfx942", "gfx950",
        ],
    ),
    wide(
        "gfx10",
        Level::Family,
        "GFX10",
        None,
        &[
            "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033",
            "gfx1034", "gfx1035", "gfx1036",
        ],
    ),
    wide(
        "gfx11",
        Level::Family,
        "RDNA3",
        Some("gfx11-generic"),
        &[
            "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
        ],
    ),
    wide(
        "gfx12",
        Level::Family,
        "RDNA4",
        None,
        &["gfx1200", "gfx1201", "gfx1250", "gfx1250-strict", "gfx1251"],
    ),
    wide(
        "gfx9_0",
        Level::SubFamily,
        "Vega",
        Some("gfx9-generic"),
        &[
            "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
        ],
    ),
    wide(
        "gfx9_4",
        Level::SubFamily,
        "MI300",
        Some("gfx9-4-generic"),
        &["gfx942"],
    ),
    wide("gfx9_5", Level::SubFamily, "MI350", None, &["gfx950"]),
    wide(
        "gfx10_1",
        Level::SubFamily,
        "RDNA1",
        Some("gfx10-1-generic"),
        &["gfx1010", "gfx1011", "gfx1012", "gfx1013"],
    ),
    wide(
        "gfx10_3",
        Level::SubFamily,
        "RDNA2",
        Some("gfx10-3-generic"),
        &[
            "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
        ],
    ),
    wide(
        "gfx110x",
        Level::SubFamily,
        "RDNA3",
        None,
        &["gfx1100", "gfx1101", "gfx1102", "gfx1103"],
    ),
    wide(
        "gfx115x",
        Level::SubFamily,
        "RDNA3.5",
        None,
        &["gfx1150", "gfx1151", "gfx1152", "gfx1153"],
    ),
    wide(
        "gfx12_0",
        Level::SubFamily,
        "RDNA4",
        Some("gfx12-generic"),
        &["gfx1200", "gfx1201"],
    ),
    wide(
        "gfx12_5",
        Level::SubFamily,
        "GFX12.5",
        None,
        &["gfx1250", "gfx1250-strict", "gfx1251"],
    ),
];

const fn wide(
    key: &'static str,
    level: Level,
    display: &'static str,
    generic: Option<&'static str>,
    members: &'static [&'static str],
) -> Group {
    Group {
        key,
        level,
        display,
        generic,
        members,
    }
}

/// The target groups, one per processor but `gfx1250-strict` (in `gfx1250`'s).
const TARGETS: &[Group] = &[
    one("gfx900", &["gfx900"]),
    one("gfx902", &["gfx902"]),
    one("gfx904", &["gfx904"]),
    one("gfx906", &["gfx906"]),
    one("gfx908", &["gfx908"]),
    one("gfx909", &["gfx909"]),
    one("gfx90a", &["gfx90a"]),
    one("gfx90c", &["gfx90c"]),
    one("gfx942", &["gfx942"]),
    one("gfx950", &["gfx950"]),
    one("gfx1010", &["gfx1010"]),
    one("gfx1011", &["gfx1011"]),
    one("gfx1012", &["gfx1012"]),
    one("gfx1013", &["gfx1013"]),
    one("gfx1030", &["gfx1030"]),
    one("gfx1031", &["gfx1031"]),
    one("gfx1032", &["gfx1032"]),
    one("gfx1033", &["gfx1033"]),
    one("gfx1034", &["gfx1034"]),
    one("gfx1035", &["gfx1035"]),
    one("gfx1036", &["gfx1036"]),
    one("gfx1100", &["gfx1100"]),
    one("gfx1101", &["gfx1101"]),
    one("gfx1102", &["gfx1102"]),
    one("gfx1103", &["gfx1103"]),
    one("gfx1150", &["gfx1150"]),
    one("gfx1151", &["gfx1151"]),
    one("gfx1152", &["gfx1152"]),
    one("gfx1153", &["gfx1153"]),
    one("gfx1200", &["gfx1200"]),
    one("gfx1201", &["gfx1201"]),
    one("gfx1250", &["gfx1250", "gfx1250-strict"]),
    one("gfx1251", &["gfx1251"]),
];

const fn one(key: &'static str, members: &'static [&'static str]) -> Group {
    Group {
        key,
        level: Level::Target,
        display: key,
        generic: None,
        members,
    }
}

impl PartialOrd for Group {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Group {
    /// By key (keys are unique), as AMD's splitter sorts its groups.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(other.key)
    }
}

/// Every processor with a package, in the table's order.
pub fn processors() -> impl Iterator<Item = &'static str> {
    ROWS.iter().map(|r| r.processor)
}

/// Every group: families, sub-families, then targets.
pub fn all() -> impl Iterator<Item = &'static Group> {
    WIDE.iter()
        .filter(|g| g.level == Level::Family)
        .chain(WIDE.iter().filter(|g| g.level == Level::SubFamily))
        .chain(TARGETS)
}

/// The group with `key` (`gfx942`, `gfx110x`, `gfx12_0`, `gfx11`); the old spellings
/// `gfx11_0` and `gfx11_5` of the RDNA3 sub-families are taken too.
pub fn lookup(key: &str) -> Option<&'static Group> {
    let key = match key {
        "gfx11_0" => "gfx110x",
        "gfx11_5" => "gfx115x",
        other => other,
    };
    all().find(|g| g.key == key)
}

/// The processor's target group, sub-family and family, most specific first; `None` for a
/// processor without a package.
pub fn chain(processor: &str) -> Option<[&'static Group; 3]> {
    let row = ROWS.iter().find(|r| r.processor == processor)?;
    Some([
        lookup(row.target)?,
        lookup(row.sub_family)?,
        lookup(row.family)?,
    ])
}

/// The group whose package holds code for the target ID `target` (features such as `:xnack-`
/// go with their processor): its processor's target group, or for a generic target the group
/// whose generic target it is. `None` when no package is made for it.
pub fn group_of(target: &str) -> Option<&'static Group> {
    let processor = target.split(':').next().unwrap_or(target);
    if let Some([group, ..]) = chain(processor) {
        return Some(group);
    }
    WIDE.iter().find(|g| g.generic == Some(processor))
}

/// The chain of groups a package of `group` depends on, itself first: a target's sub-family
/// and family, a sub-family's family, a family alone.
pub fn parents(group: &Group) -> Vec<&'static Group> {
    let Some(first) = group.members.first() else {
        return Vec::new();
    };
    let Some(chain) = chain(first) else {
        return Vec::new();
    };
    let from = chain
        .iter()
        .position(|g| g.level == group.level)
        .unwrap_or(0);
    chain.iter().skip(from).copied().collect()
}

/// The distribution name of `group`'s package: `PREFIX-KEY`, `_` in the key spelt `-`.
pub fn dist_name(prefix: &str, group: &Group) -> String {
    format!("{prefix}-{}", group.key.replace('_', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_processor_has_one_chain_and_each_group_lists_its_members() {
        for row in ROWS {
            let [target, sub, family] = chain(row.processor).unwrap();
            assert_eq!(target.level, Level::Target);
            assert_eq!(sub.level, Level::SubFamily);
            assert_eq!(family.level, Level::Family);
            for group in [target, sub, family] {
                assert!(group.members.contains(&row.processor), "{}", group.key);
            }
        }
        assert_eq!(all().count(), 4 + 9 + 33);
        let sub = lookup("gfx9_4").unwrap();
        let keys: Vec<&str> = parents(sub).iter().map(|g| g.key).collect();
        assert_eq!(keys, ["gfx9_4", "gfx9"]);
        assert_eq!(lookup("gfx11_5").unwrap().key, "gfx115x");
        assert_eq!(group_of("gfx1250-strict").unwrap().key, "gfx1250");
        assert_eq!(group_of("gfx9-4-generic").unwrap().key, "gfx9_4");
        assert!(group_of("gfx940").is_none() && group_of("gfx12-5-generic").is_none());
    }
}
