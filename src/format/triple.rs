//! Temporary minimal triple (replaced by the full port).
#![allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    UnknownArch,
    X86_64,
    Amdgcn,
    R600,
    Nvptx64,
    Nvptx,
    Aarch64,
    Other,
}
#[derive(Debug, Clone)]
pub struct Triple {
    data: String,
    pieces: [String; 4],
    arch: Arch,
}
impl Triple {
    pub fn new(text: &str) -> Triple {
        let mut it = text.splitn(4, '-');
        let p: Vec<String> = (0..4)
            .map(|_| it.next().unwrap_or("").to_string())
            .collect();
        let arch = match p[0].as_str() {
            "x86_64" => Arch::X86_64,
            "amdgcn" => Arch::Amdgcn,
            "r600" => Arch::R600,
            "nvptx64" => Arch::Nvptx64,
            "nvptx" => Arch::Nvptx,
            "aarch64" => Arch::Aarch64,
            "" => Arch::UnknownArch,
            s if s
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && s != "foo"
                && !s.starts_with("gfx") =>
            {
                Arch::Other
            }
            _ => Arch::UnknownArch,
        };
        Triple {
            data: text.to_string(),
            pieces: [p[0].clone(), p[1].clone(), p[2].clone(), p[3].clone()],
            arch,
        }
    }
    pub fn from_parts(a: &str, v: &str, o: &str, e: &str) -> Triple {
        let mut t = Triple::new(a);
        t.data = format!("{a}-{v}-{o}-{e}");
        t.pieces = [a.into(), v.into(), o.into(), e.into()];
        t
    }
    pub fn arch_name(&self) -> &str {
        &self.pieces[0]
    }
    pub fn vendor_name(&self) -> &str {
        &self.pieces[1]
    }
    pub fn os_name(&self) -> &str {
        &self.pieces[2]
    }
    pub fn environment_name(&self) -> &str {
        &self.pieces[3]
    }
    pub fn as_str(&self) -> &str {
        &self.data
    }
    pub fn arch(&self) -> Arch {
        self.arch
    }
    pub fn is_amdgcn(&self) -> bool {
        self.arch == Arch::Amdgcn
    }
    pub fn is_r600(&self) -> bool {
        self.arch == Arch::R600
    }
    pub fn is_amdgpu(&self) -> bool {
        self.is_amdgcn() || self.is_r600()
    }
    pub fn is_compatible_with(&self, o: &Triple) -> bool {
        self.arch == o.arch
            && self.pieces[1] == o.pieces[1]
            && self.pieces[2] == o.pieces[2]
            && (self.pieces[3] == o.pieces[3]
                || (self.pieces[3].is_empty() && o.pieces[3] == "unknown")
                || (o.pieces[3].is_empty() && self.pieces[3] == "unknown"))
    }
}
