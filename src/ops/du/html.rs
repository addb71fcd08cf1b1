//! `du --html`: one self-contained HTML page (no script, no font, no image fetched from
//! anywhere) showing where the bytes of device code go as a treemap drawn in inline SVG: a
//! rectangle per file, inside it one per package member and per section, inside those one per
//! target, each sized by the bytes stored and coloured by target (a legend beside); what
//! `--keep` would remove hatched. The numbers are written in the page too, exactly, as
//! `data-` attributes and in a table of the totals by target: the same as `du --json`'s.
//!
//! # Example
//!
//! The page of a bundle file: a rectangle per target, the totals written exactly.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::du;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", &[1; 3000]),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", &[2; 1000]),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//! let usage = du::file_usage(&file, DEFAULT_MAX_DECOMPRESSED, None)?;
//! let total = du::total(std::slice::from_ref(&usage));
//! let page = du::html::page(&[usage], &total, &[]);
//! assert!(page.contains("<svg id=\"treemap\""));
//! assert!(page.contains("data-target=\"gfx90a\" data-stored=\"3000\""));
//! assert!(page.contains("class=\"all\" data-images=\"2\" data-stored=\"4000\""));
//! assert!(!page.contains("http"));
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::ops::du::treemap::{squarify, Rect};
use crate::ops::du::{FileUsage, Part, Usage};

/// The treemap's size in pixels.
const WIDTH: f64 = 1000.0;
/// The treemap's height in pixels.
const HEIGHT: f64 = 660.0;
/// The height of a group's label strip.
const LABEL: f64 = 15.0;

/// A rectangle to draw: a file, a member, a section, or a target's bytes in one of them.
struct Node {
    /// What it is: `file`, `member`, `section` or `target`.
    kind: &'static str,
    /// Its name, as shown.
    label: String,
    /// Its stored bytes.
    stored: u64,
    /// Its stored bytes a strip would remove.
    removed: u64,
    /// The file it is in, as shown.
    file: String,
    /// Its target, for a leaf.
    target: Option<String>,
    /// Its parts, most stored bytes first.
    children: Vec<Node>,
}

/// The page for `files` and their `total` (as [`crate::ops::du::total`] gives it); `keep`
/// names the targets of `--keep`, when given, for the caption of what is hatched.
pub fn page(files: &[FileUsage], total: &[Usage], keep: &[String]) -> String {
    let colours: BTreeMap<&str, String> = (total.iter().enumerate())
        .map(|(i, usage)| (usage.target.as_str(), colour(i)))
        .collect();
    let stored: u64 = total.iter().map(|u| u.stored).sum();
    let mut roots: Vec<Node> = files.iter().map(file_node).collect();
    roots.sort_by_key(|n| std::cmp::Reverse(n.stored));
    let mut out = String::new();
    out.push_str(HEAD);
    let _ = writeln!(
        out,
        "<h1>Device code: {} stored in {} file{}</h1>",
        human(stored),
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    if !keep.is_empty() {
        let removed: u64 = total.iter().filter_map(|u| u.removed).sum();
        let _ = writeln!(
            out,
            "<p class=\"keep\">Hatched: what <code>offload strip --keep {}</code> would remove, \
             <span id=\"removed\" data-removed=\"{removed}\">{}</span>.</p>",
            escape(&keep.join(" --keep ")),
            human(removed),
        );
    }
    out.push_str("<div class=\"view\">\n");
    let _ = write!(
        out,
        "<svg id=\"treemap\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" data-stored=\"{stored}\">\n{PATTERN}"
    );
    let area = Rect {
        x: 0.0,
        y: 0.0,
        w: WIDTH,
        h: HEIGHT,
    };
    let values: Vec<u64> = roots.iter().map(|n| n.stored).collect();
    for (node, rect) in roots.iter().zip(squarify(&values, area)) {
        draw(&mut out, node, rect, &colours);
    }
    out.push_str("</svg>\n");
    legend(&mut out, total, !keep.is_empty(), &colours);
    out.push_str("</div>\n</body>\n</html>\n");
    out
}

/// The node of one file: its members, sections and targets, a level left out where it would
/// hold one unnamed part only.
fn file_node(file: &FileUsage) -> Node {
    let shown = crate::io::shown(&file.path).into_owned();
    let mut by_member: BTreeMap<Option<&std::path::Path>, Vec<&Part>> = BTreeMap::new();
    for part in &file.parts {
        by_member
            .entry(part.member.as_deref())
            .or_default()
            .push(part);
    }
    let mut members: Vec<Node> = by_member
        .into_iter()
        .map(|(member, parts)| {
            let sections = section_nodes(&parts, &shown);
            match member {
                Some(name) => group(
                    "member",
                    crate::io::shown(name).into_owned(),
                    &shown,
                    sections,
                ),
                None => group("member", String::new(), &shown, sections),
            }
        })
        .collect();
    let children = match members.as_slice() {
        [only] if only.label.is_empty() => members.pop().map_or_else(Vec::new, |m| m.children),
        _ => members,
    };
    group("file", shown.clone(), &shown, children)
}

/// The nodes of the sections of `parts` (of one member), each holding its targets' leaves; the
/// leaves themselves when they lie in no section.
fn section_nodes(parts: &[&Part], file: &str) -> Vec<Node> {
    let mut by_section: BTreeMap<&str, Vec<Node>> = BTreeMap::new();
    for part in parts {
        by_section
            .entry(part.section.as_str())
            .or_default()
            .push(Node {
                kind: "target",
                label: part.target.clone(),
                stored: part.stored,
                removed: part.removed,
                file: file.to_string(),
                target: Some(part.target.clone()),
                children: Vec::new(),
            });
    }
    let mut sections: Vec<Node> = Vec::new();
    for (section, leaves) in by_section {
        if section.is_empty() {
            sections.extend(leaves);
        } else {
            sections.push(group("section", section.to_string(), file, leaves));
        }
    }
    sections.sort_by_key(|n| std::cmp::Reverse(n.stored));
    sections
}

/// A node of `kind` named `label` in `file` over `children` (sorted here).
fn group(kind: &'static str, label: String, file: &str, mut children: Vec<Node>) -> Node {
    children.sort_by_key(|n| std::cmp::Reverse(n.stored));
    Node {
        kind,
        label,
        stored: children.iter().map(|c| c.stored).sum(),
        removed: children.iter().map(|c| c.removed).sum(),
        file: file.to_string(),
        target: None,
        children,
    }
}

/// Draws `node` in `rect`.
fn draw(out: &mut String, node: &Node, rect: Rect, colours: &BTreeMap<&str, String>) {
    let (x, y, w, h) = (rect.x, rect.y, rect.w, rect.h);
    let title = format!("{}: {} bytes", node.label, node.stored);
    if let Some(target) = &node.target {
        let fill = colours.get(target.as_str()).map_or("#999", String::as_str);
        let _ = write!(
            out,
            "<g class=\"target\"><rect class=\"leaf\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" \
             height=\"{h:.2}\" fill=\"{fill}\" data-file=\"{}\" data-target=\"{}\" \
             data-stored=\"{}\" data-removed=\"{}\"><title>{} \u{203a} {}</title></rect>",
            escape(&node.file),
            escape(target),
            node.stored,
            node.removed,
            escape(&node.file),
            escape(&title),
        );
        if node.removed > 0 && node.stored > 0 {
            // The share removed, hatched, along the longer side.
            let share = node.removed.min(node.stored) as f64 / node.stored as f64;
            let (rw, rh) = if w >= h {
                (w * share, h)
            } else {
                (w, h * share)
            };
            let _ = write!(
                out,
                "<rect class=\"removed\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{rw:.2}\" \
                 height=\"{rh:.2}\" fill=\"url(#hatch)\"/>"
            );
        }
        label(out, rect, &node.label, &human(node.stored));
        out.push_str("</g>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<g class=\"{}\" data-name=\"{}\" data-stored=\"{}\"><rect class=\"box\" x=\"{x:.2}\" \
         y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\"><title>{}</title></rect>",
        node.kind,
        escape(&node.label),
        node.stored,
        escape(&title),
    );
    let mut inner = rect.inset(1.5);
    if inner.h > 3.0 * LABEL && inner.w > 60.0 {
        label(out, inner, &node.label, &human(node.stored));
        inner = inner.below(LABEL);
    }
    let values: Vec<u64> = node.children.iter().map(|n| n.stored).collect();
    for (child, rect) in node.children.iter().zip(squarify(&values, inner)) {
        draw(out, child, rect, colours);
    }
    out.push_str("</g>\n");
}

/// Writes `name` and `size` at the top left of `rect` when there is room, cut to fit.
fn label(out: &mut String, rect: Rect, name: &str, size: &str) {
    if rect.h < LABEL || rect.w < 30.0 {
        return;
    }
    // About 6.5 pixels a character at 11 pixels.
    let room = ((rect.w - 6.0) / 6.5) as usize;
    let text = format!("{name} {size}");
    let text: String = match text.chars().count() > room {
        true => {
            let kept: String = text.chars().take(room.saturating_sub(1)).collect();
            kept + "\u{2026}"
        }
        false => text,
    };
    let _ = write!(
        out,
        "<text x=\"{:.2}\" y=\"{:.2}\">{}</text>",
        rect.x + 3.0,
        rect.y + 11.5,
        escape(&text)
    );
}

/// The legend and the table of totals by target, exact numbers in `data-` attributes.
fn legend(out: &mut String, total: &[Usage], keep: bool, colours: &BTreeMap<&str, String>) {
    out.push_str("<table id=\"totals\">\n<tr><th></th><th>target</th><th>images</th><th>stored</th><th>inflated</th>");
    if keep {
        out.push_str("<th>removed</th>");
    }
    out.push_str("</tr>\n");
    for usage in total {
        let fill = colours
            .get(usage.target.as_str())
            .map_or("#999", String::as_str);
        let _ = write!(
            out,
            "<tr class=\"target\" data-target=\"{}\" data-images=\"{}\" data-stored=\"{}\" \
             data-inflated=\"{}\"{}><td><span class=\"swatch\" style=\"background:{fill}\">\
             </span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            escape(&usage.target),
            usage.images,
            usage.stored,
            usage.inflated,
            usage
                .removed
                .map_or_else(String::new, |r| format!(" data-removed=\"{r}\"")),
            escape(&usage.target),
            usage.images,
            human(usage.stored),
            human(usage.inflated),
        );
        if keep {
            let _ = write!(out, "<td>{}</td>", human(usage.removed.unwrap_or(0)));
        }
        out.push_str("</tr>\n");
    }
    let sum = |f: fn(&Usage) -> u64| total.iter().map(f).sum::<u64>();
    let _ = write!(
        out,
        "<tr class=\"all\" data-images=\"{}\" data-stored=\"{}\" data-inflated=\"{}\"><td></td>\
         <td>all</td><td>{}</td><td>{}</td><td>{}</td>",
        sum(|u| u.images),
        sum(|u| u.stored),
        sum(|u| u.inflated),
        sum(|u| u.images),
        human(sum(|u| u.stored)),
        human(sum(|u| u.inflated)),
    );
    if keep {
        let _ = write!(out, "<td>{}</td>", human(sum(|u| u.removed.unwrap_or(0))));
    }
    out.push_str("</tr>\n</table>\n");
}

/// The colour of the `i`th target (by stored bytes): hues far apart, the first ones most.
fn colour(i: usize) -> String {
    let hue = (i as f64 * 137.508) % 360.0;
    let light = [58, 45, 68][i / 8 % 3];
    format!("hsl({hue:.0},62%,{light}%)")
}

/// `bytes` for people: B, KiB, MiB or GiB.
fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

/// `text` escaped for HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's head: its style, nothing fetched.
const HEAD: &str = "<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<title>offload du</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 17px; margin: 0 0 8px; }
p.keep { margin: 0 0 8px; }
svg text { font: 11px system-ui, sans-serif; fill: #111; pointer-events: none; }
rect.box { fill: #f4f4f4; stroke: #555; stroke-width: 1; }
g.member > rect.box, g.section > rect.box { fill: #e6e6e6; stroke: #888; }
rect.leaf { stroke: #fff; stroke-width: 0.5; }
rect.leaf:hover { stroke: #000; stroke-width: 1.5; }
div.view { display: flex; align-items: flex-start; gap: 16px; }
svg { flex: none; }
table { border-collapse: collapse; }
td, th { padding: 2px 10px; text-align: right; white-space: nowrap; }
td:nth-child(2), th:nth-child(2) { text-align: left; }
tr.all { font-weight: bold; border-top: 1px solid #888; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #666; }
</style>
</head>
<body>
";

/// The hatching of what `--keep` would remove.
const PATTERN: &str = "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" \
patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" \
fill=\"rgba(255,255,255,0.3)\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" \
stroke=\"rgba(0,0,0,0.45)\" stroke-width=\"1.5\"/></pattern></defs>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_sizes_shown() {
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 << 30), "3.0 GiB");
    }
}
