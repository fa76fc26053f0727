pub fn helper() {}

pub mod deep {
    pub fn deep_fn() {
        super::helper();
    }
}
