pub fn where_am_i() -> String {
    format!("inner: {}:{}", file!(), line!())
}
