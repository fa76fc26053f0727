pub fn where_am_i() -> String {
    format!("leaf: {}:{}:{} ({} bytes of itself)", file!(), line!(), column!(), include_str!("leaf.rs").len())
}
