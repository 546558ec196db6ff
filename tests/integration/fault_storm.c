/* A page-fault storm on one file: THREADS threads map MAPPED read-only (MAP_SHARED, as safetensors and llama.cpp
 * map weights), wait at a barrier so that they fault together, then each touches TOUCHES pages picked at random
 * and compares every byte of each with the same page of EXPECTED (a plain file on disk). A touch that raises
 * SIGBUS (the kernel's answer when the filesystem fails the read behind a fault) is caught in the faulting
 * thread and recorded; with STOP_AT_SIGBUS=1 that thread then stops (its other pages could only fail the same
 * way, one retry series each).
 *
 * usage: fault_storm MAPPED EXPECTED THREADS TOUCHES SEED STOP_AT_SIGBUS
 * prints one line per touch, "ok PAGE", "sigbus PAGE" or "wrong PAGE", and exits 0; 2 on a usage or setup error. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum outcome { NOT_TOUCHED, OK, SIGBUS_RAISED, WRONG };
static const char *const outcome_names[] = {"", "ok", "sigbus", "wrong"};

static const unsigned char *mapped;
static const unsigned char *expected;
static size_t file_size, page_size, pages;
static int touches, stop_at_sigbus;
static unsigned long seed;
static pthread_barrier_t start_together;
/* Where a SIGBUS in this thread resumes; NULL outside a touch. volatile, and fenced in touch(), because the compiler
 * knows memcmp reads no global: it would otherwise drop or move the stores around the call. */
static __thread sigjmp_buf *volatile landing;

struct thread_log {
    int index;
    size_t *page;
    enum outcome *outcome;
};

static void on_sigbus(int signal_number) {
    if (landing != NULL)
        siglongjmp(*landing, 1);
    signal(signal_number, SIG_DFL);  /* a SIGBUS outside a touch is a real crash */
    raise(signal_number);
}

/* splitmix64: a small, well-mixed generator, seeded per thread so that runs are reproducible. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static enum outcome touch(size_t page) {
    size_t begin = page * page_size;
    size_t length = begin + page_size <= file_size ? page_size : file_size - begin;
    sigjmp_buf here;
    enum outcome result;
    if (sigsetjmp(here, 1) == 0) {
        landing = &here;
        __asm__ volatile("" ::: "memory");
        result = memcmp(mapped + begin, expected + begin, length) == 0 ? OK : WRONG;
        __asm__ volatile("" ::: "memory");
    } else {
        result = SIGBUS_RAISED;
    }
    landing = NULL;
    return result;
}

static void *storm(void *argument) {
    struct thread_log *log = argument;
    uint64_t state = seed * 1000003u + (uint64_t)log->index;
    pthread_barrier_wait(&start_together);
    for (int i = 0; i < touches; ++i) {
        log->page[i] = next_random(&state) % pages;
        log->outcome[i] = touch(log->page[i]);
        if (log->outcome[i] == SIGBUS_RAISED && stop_at_sigbus)
            break;
    }
    return NULL;
}

static const unsigned char *map_whole(const char *path, size_t *size) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(path);
        exit(2);
    }
    *size = (size_t)st.st_size;
    void *address = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, 0);
    if (address == MAP_FAILED) {
        perror(path);
        exit(2);
    }
    close(fd);
    return address;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s MAPPED EXPECTED THREADS TOUCHES SEED STOP_AT_SIGBUS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[3]);
    touches = atoi(argv[4]);
    seed = strtoul(argv[5], NULL, 10);
    stop_at_sigbus = atoi(argv[6]);
    size_t expected_size;
    mapped = map_whole(argv[1], &file_size);
    expected = map_whole(argv[2], &expected_size);
    if (threads <= 0 || touches <= 0 || expected_size != file_size) {
        fprintf(stderr, "fault_storm: bad arguments, or %s and %s differ in size\n", argv[1], argv[2]);
        return 2;
    }
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    pages = (file_size + page_size - 1) / page_size;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_sigbus;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, NULL);

    pthread_barrier_init(&start_together, NULL, (unsigned)threads);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    struct thread_log *logs = calloc((size_t)threads, sizeof *logs);
    for (int t = 0; t < threads; ++t) {
        logs[t].index = t;
        logs[t].page = calloc((size_t)touches, sizeof *logs[t].page);
        logs[t].outcome = calloc((size_t)touches, sizeof *logs[t].outcome);
        if (pthread_create(&ids[t], NULL, storm, &logs[t]) != 0) {
            perror("pthread_create");
            return 2;
        }
    }
    for (int t = 0; t < threads; ++t)
        pthread_join(ids[t], NULL);
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < touches && logs[t].outcome[i] != NOT_TOUCHED; ++i)
            printf("%s %zu\n", outcome_names[logs[t].outcome[i]], logs[t].page[i]);
    return 0;
}
