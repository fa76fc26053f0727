pub fn below_plain() {
    super::leaf();
}
