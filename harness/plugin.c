/* Loading a plugin and mapping its operators onto dispatch-table slots (plugin.h). */
#include "plugin.h"
#include "registry.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct plugin_op {
    const char *name;
    size_t plugin_offset; /* of the pointer in longmix_plugin_ops */
    size_t table_offset;  /* of the slot in lm_ops */
} plugin_op;

/* Every operator of the ABI is a slot of the table of the same name and signature (a
 * mismatch does not compile: the initializer's types must agree). */
#define PLUGIN_OP_ROW(slot, signature)                                                    \
    {#slot, offsetof(longmix_plugin_ops, slot), offsetof(lm_ops, slot)},
static const plugin_op plugin_ops[] = {LONGMIX_PLUGIN_OPS(PLUGIN_OP_ROW)};
#undef PLUGIN_OP_ROW
_Static_assert(sizeof plugin_ops / sizeof plugin_ops[0] <= LM_PLUGIN_OP_MAX,
               "LM_PLUGIN_OP_MAX holds every operator");

#define PLUGIN_OP_TYPE_CHECK(slot, signature)                                             \
    _Static_assert(_Generic(((lm_ops *)0)->slot, signature *: 1, default: 0),             \
                   "plugin operator " #slot " must have its slot's signature");
LONGMIX_PLUGIN_OPS(PLUGIN_OP_TYPE_CHECK)
#undef PLUGIN_OP_TYPE_CHECK

/* The kernel word of every slot, from the kernel list. */
typedef struct slot_word {
    const char *slot, *word;
} slot_word;
#define SLOT_WORD_ROW(name, kernel, signature, family, paths) {#name, #kernel},
static const slot_word slot_words[] = {LM_KERNELS(SLOT_WORD_ROW)};
#undef SLOT_WORD_ROW

size_t lm_plugin_op_count(void) { return sizeof plugin_ops / sizeof plugin_ops[0]; }

const char *lm_plugin_op_name(size_t op)
{
    return op < lm_plugin_op_count() ? plugin_ops[op].name : NULL;
}

const char *lm_plugin_op_kernel(size_t op)
{
    for (size_t i = 0; op < lm_plugin_op_count() && i < sizeof slot_words / sizeof *slot_words; i++)
        if (strcmp(slot_words[i].slot, plugin_ops[op].name) == 0)
            return slot_words[i].word;
    return NULL;
}

typedef void generic_fn(void);

static generic_fn *op_pointer(const longmix_plugin_ops *ops, size_t op)
{
    generic_fn *fn;
    memcpy(&fn, (const char *)ops + plugin_ops[op].plugin_offset, sizeof fn);
    return fn;
}

bool lm_plugin_provides(const lm_plugin *plugin, size_t op)
{
    return op < lm_plugin_op_count() && op_pointer(&plugin->ops, op) != NULL;
}

static bool op_named(const char *name, size_t *op)
{
    for (size_t i = 0; i < lm_plugin_op_count(); i++)
        if (strcmp(plugin_ops[i].name, name) == 0) {
            *op = i;
            return true;
        }
    return false;
}

bool lm_plugin_op_of_word(const char *word, const char *dtype, size_t *op)
{
    char slot[96];
    snprintf(slot, sizeof slot, "%s_%s", word, dtype);
    size_t found;
    if (!op_named(slot, &found) && !(strcmp(dtype, "f64") != 0 && op_named(word, &found)))
        return false;
    const char *kernel = lm_plugin_op_kernel(found);
    if (kernel == NULL || strcmp(kernel, word) != 0)
        return false;
    *op = found;
    return true;
}

bool lm_plugin_op_of_case(const lm_kcase *kcase, size_t *op)
{
    const lm_registry_entry *entry =
        lm_registry_find(kcase->kernel, json_object_get(kcase->json, "options"));
    return entry != NULL && strcmp(kcase->dtype, "f64") != 0 &&
           lm_plugin_op_of_word(entry->name, kcase->dtype, op);
}

static bool valid_name(const char *name)
{
    size_t length = strnlen(name, LM_PLUGIN_NAME_MAX + 1);
    if (length == 0 || length > LM_PLUGIN_NAME_MAX)
        return false;
    for (size_t i = 0; i < length; i++) {
        const char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

void lm_plugin_table_on(const lm_plugin *plugin, const lm_ops *base, lm_ops *out)
{
    *out = *base;
    out->isa = LM_ISA_SCALAR;
    for (size_t op = 0; op < lm_plugin_op_count(); op++) {
        generic_fn *fn = op_pointer(&plugin->ops, op);
        if (fn != NULL)
            memcpy((char *)out + plugin_ops[op].table_offset, &fn, sizeof fn);
    }
}

/* Reads what the entry point returned into *plugin and builds its table. */
static lm_status adopt(lm_plugin *plugin, const longmix_plugin *found, const char *path,
                       lm_error *err)
{
    if (found == NULL)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: %s() returned NULL", path,
                       "longmix_plugin_entry");
    if (found->abi_version != LONGMIX_PLUGIN_ABI_VERSION)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: plugin ABI version %u, but this longmix "
                       "speaks version %u (rebuild the plugin against this longmix's "
                       "longmix_plugin.h)", path, (unsigned)found->abi_version,
                       LONGMIX_PLUGIN_ABI_VERSION);
    if (found->name == NULL || !valid_name(found->name))
        return lm_fail(err, LM_ERR_SCHEMA, "%s: plugin name must be 1 to %d of "
                       "[A-Za-z0-9_.-]", path, LM_PLUGIN_NAME_MAX);
    snprintf(plugin->name, sizeof plugin->name, "%s", found->name);
    plugin->ops = found->ops;
    lm_plugin_table_on(plugin, lm_ops_for(LM_ISA_SCALAR), &plugin->table);
    size_t provided = 0;
    for (size_t op = 0; op < lm_plugin_op_count(); op++)
        provided += op_pointer(&plugin->ops, op) != NULL;
    if (provided == 0)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: plugin %s provides no operator", path,
                       plugin->name);
    return LM_OK;
}

lm_status lm_plugin_load(lm_plugin *plugin, const char *path, lm_error *err)
{
    *plugin = (lm_plugin){0};
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        return lm_fail(err, LM_ERR_IO, "cannot load plugin %s: %s", path,
                       why ? why : "dlopen failed");
    }
    dlerror();
    void *symbol = dlsym(handle, "longmix_plugin_entry");
    if (symbol == NULL) {
        dlclose(handle);
        return lm_fail(err, LM_ERR_SCHEMA, "%s: no entry point longmix_plugin_entry (a plugin "
                       "defines it: kernels/include/longmix_plugin.h)", path);
    }
    longmix_plugin_entry_fn *entry;
    memcpy(&entry, &symbol, sizeof entry); /* POSIX: object pointer to function pointer */
    lm_status status = adopt(plugin, entry(), path, err);
    if (status != LM_OK) {
        dlclose(handle);
        *plugin = (lm_plugin){0};
        return status;
    }
    plugin->handle = handle;
    return LM_OK;
}

void lm_plugin_close(lm_plugin *plugin)
{
    if (plugin->handle != NULL)
        dlclose(plugin->handle);
    *plugin = (lm_plugin){0};
}
