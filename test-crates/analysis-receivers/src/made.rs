//! Associated functions a macro makes (pest_derive's `JsonParser::parse`, a `macro_rules!` constructor): the
//! analysis does not expand macros, so a call to one is noted as unresolved, not dropped in silence; a std derive's
//! (`Made::clone`) leaves the workspace, with no note.

macro_rules! constructor {
    ($name:ident) => {
        impl $name {
            pub fn build(n: u32) -> $name {
                $name { n }
            }
        }
    };
}

#[derive(Clone)]
pub struct Made {
    n: u32,
}

constructor!(Made);

pub fn made_total() -> u32 {
    let made = Made::build(3);
    let copy = Made::clone(&made);
    (0..copy.n).map(|i| i * made.n).sum()
}
