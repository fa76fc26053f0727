//! A blanket impl (`impl<T: Named> Describe for T`, as digest's `impl<D: ..> Digest for D`): its methods are shown
//! as `<T as Describe>::describe`, not `T::describe`, which names no type.

pub trait Named {
    fn name(&self) -> String;
}

pub trait Describe {
    fn describe(&self) -> String;
}

impl<T: Named> Describe for T {
    fn describe(&self) -> String {
        let mut text = String::new();
        for part in ["<", &self.name(), ">"] {
            text.push_str(part);
        }
        text
    }
}

pub struct Unit;

impl Named for Unit {
    fn name(&self) -> String {
        (0..3).map(|i| i.to_string()).collect()
    }
}

pub fn show() -> String {
    Unit.describe()
}
