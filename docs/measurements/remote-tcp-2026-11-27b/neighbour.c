/* A CPU-bound neighbour: counts loop iterations until SIGTERM, then prints
 * "iters elapsed_s cpu_s iters_per_wall_s" on one line. Its rate while a
 * benchmark runs beside it is the CPU the benchmark left it.
 * Build: gcc -O2 -o neighbour neighbour.c */
#include <signal.h>
#include <stdio.h>
#include <time.h>
static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
int main(void) {
	struct timespec a, b, ca, cb;
	signal(SIGTERM, on_term);
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
	unsigned long long n = 0;
	volatile unsigned long long x = 1;
	while (!stop) {
		for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		n++;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
	double w = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	double c = (cb.tv_sec - ca.tv_sec) + (cb.tv_nsec - ca.tv_nsec) / 1e9;
	printf("%llu %.3f %.3f %.0f\n", n, w, c, n / w);
	return 0;
}
