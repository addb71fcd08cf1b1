//! The labels of the wrappers' assemblers: places in the code that branches go to, bound when
//! the code reaches them, and the branches to fill in once every label is bound.

/// A place in the code that branches go to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Label(usize);

/// The labels of one function's code and the branches to them, each with its encoding form.
pub(crate) struct Labels<Form> {
    bound: Vec<Option<usize>>,
    branches: Vec<(usize, Label, Form)>,
}

impl<Form: Copy> Labels<Form> {
    pub(crate) fn new() -> Labels<Form> {
        Labels {
            bound: Vec::new(),
            branches: Vec::new(),
        }
    }

    /// A new label, not yet bound.
    pub(crate) fn label(&mut self) -> Label {
        self.bound.push(None);
        Label(self.bound.len() - 1)
    }

    /// Binds `label` to offset `at` of the code.
    pub(crate) fn bind(&mut self, label: Label, at: usize) {
        self.bound[label.0] = Some(at);
    }

    /// A branch of `form` at offset `at` to `label`.
    pub(crate) fn branch(&mut self, at: usize, label: Label, form: Form) {
        self.branches.push((at, label, form));
    }

    /// Each branch: where it is, its form, and the bytes from it to its label.
    pub(crate) fn resolved(&self) -> impl Iterator<Item = (usize, Form, i64)> + '_ {
        self.branches.iter().map(|&(at, label, form)| {
            let target = self.bound[label.0].expect("every label is bound");
            (at, form, target as i64 - at as i64)
        })
    }
}
