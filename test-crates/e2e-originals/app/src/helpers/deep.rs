pub fn where_am_i() -> String {
    format!("deep: {}:{}:{}", file!(), line!(), column!())
}
