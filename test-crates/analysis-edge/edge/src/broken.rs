pub fn fine() {}

pub fn not_rust( {
