# The top-level command: help, unknown commands.
test_help_lists_commands() {
  expect_exit 0 "$LONGMIX" --help
  expect_text out "verify"
}
test_unknown_command_is_usage_error() {
  expect_exit 2 "$LONGMIX" frobnicate
  expect_text err "unknown command 'frobnicate'"
}
test_no_command_is_usage_error() {
  expect_exit 2 "$LONGMIX"
}
