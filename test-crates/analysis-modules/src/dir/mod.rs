pub mod child;

pub fn from_dir() {
    child::grandchild();
}
