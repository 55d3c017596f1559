/* Runs a compiled graph's library (graph.so from `vta compile`) on a board, or under
   qemu-user, without Python: loads it with dlopen, fills the entry's pointer table and calls
   graph_run once.

   harness LIBRARY THREADS SLOT...   (the table's slots in order: arena, inputs, outputs,
                                      parameters)
     z:BYTES        zeroed memory (the arena)
     r:FILE         the file's bytes (an input or a parameter)
     w:FILE:BYTES   memory written to FILE after the run (an output)
   Every slot is 64-byte aligned, as the executor aligns them. Exit 0 on success. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *aligned_block(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) return NULL;
    memset(p, 0, bytes ? bytes : 64);
    return p;
}

static void *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = aligned_block((size_t)n);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) p = NULL;
    fclose(f);
    return p;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBRARY THREADS SLOT...\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    void (*run)(void **) = (void (*)(void **))dlsym(lib, "graph_run");
    void (*init)(void) = (void (*)(void))dlsym(lib, "vta_runtime_init");
    void (*threads)(int) = (void (*)(int))dlsym(lib, "vta_set_num_threads");
    if (!run || !init || !threads) {
        fprintf(stderr, "%s: no graph_run or linked parallel runtime\n", argv[1]);
        return 1;
    }
    int n = argc - 3;
    void **table = calloc((size_t)n, sizeof(void *));
    for (int k = 0; k < n; k++) {
        char *slot = argv[3 + k];
        if (slot[0] == 'z') table[k] = aligned_block(strtoull(slot + 2, NULL, 10));
        else if (slot[0] == 'r') table[k] = read_file(slot + 2);
        else if (slot[0] == 'w') table[k] = aligned_block(strtoull(strrchr(slot, ':') + 1, NULL, 10));
        if (!table[k]) {
            fprintf(stderr, "slot %s: cannot allocate or read\n", slot);
            return 1;
        }
    }
    init();
    threads(atoi(argv[2]));
    run(table);
    for (int k = 0; k < n; k++) {
        char *slot = argv[3 + k];
        if (slot[0] != 'w') continue;
        char *colon = strrchr(slot, ':');
        size_t bytes = strtoull(colon + 1, NULL, 10);
        *colon = 0;
        FILE *f = fopen(slot + 2, "wb");
        if (!f || fwrite(table[k], 1, bytes, f) != bytes) {
            fprintf(stderr, "cannot write %s\n", slot + 2);
            return 1;
        }
        fclose(f);
    }
    return 0;
}
