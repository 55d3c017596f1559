/* Preloaded (LD_PRELOAD) into a process so that it sees an AVX2-only CPU on an AVX-512 host.
 *
 * Every library picks its kernels from the CPUID instruction (LLVM's host target, onnxruntime,
 * OpenBLAS). The constructor makes CPUID fault in this process (Linux's ARCH_SET_CPUID, on CPUs
 * with CPUID faulting: "cpuid_fault" in /proc/cpuinfo; KVM offers it to its guests); the
 * SIGSEGV handler answers a faulting CPUID as the CPU would, with the AVX-512 feature bits of
 * leaf 7 cleared, and resumes after the instruction. Other faults go to the handler the process
 * installed (sigaction is wrapped so that a later handler, e.g. Python's faulthandler, is
 * chained rather than put in this one's place), or kill the process as before. The setting is
 * inherited by threads and forks; exec resets it, and the preload sets it again.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* leaf 7 subleaf 0: EBX AVX512F DQ IFMA PF ER CD BW VL; ECX VBMI VBMI2 VNNI BITALG VPOPCNTDQ;
 * EDX 4VNNIW 4FMAPS VP2INTERSECT FP16. Leaf 7 subleaf 1: EAX AVX512_BF16, EDX AVX10. */
#define LEAF7_EBX 0xdc230000u
#define LEAF7_ECX 0x00005842u
#define LEAF7_EDX 0x0080010cu
#define LEAF7_1_EAX 0x00000020u
#define LEAF7_1_EDX 0x00080000u

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;
static struct sigaction chained; /* the process's own SIGSEGV handler */
static volatile sig_atomic_t installed; /* cleared by the handler */

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
}

static void on_segv(int sig, siginfo_t *info, void *raw) {
    greg_t *g = ((ucontext_t *)raw)->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    /* a faulting CPUID is a general protection fault (SI_KERNEL), its instruction readable;
     * a page fault (e.g. a jump to an unmapped address) is not read */
    if (info->si_code == SI_KERNEL && ip[0] == 0x0f && ip[1] == 0xa2) {
        uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX], r[4];
        real_cpuid(leaf, sub, r);
        if (leaf == 7 && sub == 0) {
            r[1] &= ~LEAF7_EBX;
            r[2] &= ~LEAF7_ECX;
            r[3] &= ~LEAF7_EDX;
        } else if (leaf == 7 && sub == 1) {
            r[0] &= ~LEAF7_1_EAX;
            r[3] &= ~LEAF7_1_EDX;
        }
        g[REG_RAX] = r[0];
        g[REG_RBX] = r[1];
        g[REG_RCX] = r[2];
        g[REG_RDX] = r[3];
        g[REG_RIP] += 2;
        return;
    }
    /* a real fault: the process's own handler (or the default action) takes it when the
     * instruction runs again */
    installed = 0;
    real_sigaction(SIGSEGV, &chained, NULL);
    (void)sig;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (sig != SIGSEGV || !installed)
        return real_sigaction(sig, act, old);
    if (old)
        *old = chained;
    if (act)
        chained = *act;
    return 0;
}

__attribute__((constructor)) static void hide_avx512(void) {
    struct sigaction sa;
    real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    if (real_sigaction(SIGSEGV, &sa, &chained) != 0)
        return;
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        real_sigaction(SIGSEGV, &chained, NULL); /* no CPUID faulting: leave the process as is */
        return;
    }
    installed = 1;
}
