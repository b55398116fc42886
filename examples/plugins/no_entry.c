/* Test plugin: a shared object without the entry point (refused, exit 2). */
int longmix_plugin_entry_misspelt(void);
int longmix_plugin_entry_misspelt(void) { return 1; }
