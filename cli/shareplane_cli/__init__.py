"""The `shareplane` command and the local stack (embedded AWS + emulator + function runner)."""
