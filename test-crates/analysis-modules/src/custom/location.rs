// Loaded with #[path]: it owns its directory, so `mod near;` is src/custom/near.rs.
mod near;

pub fn moved() {
    near::close_by();
}
