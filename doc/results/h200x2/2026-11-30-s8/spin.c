#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* Per-thread speed of a dependent integer chain (no memory), 1..N threads pinned to cpus 0..N-1. */
static long iters = 200000000; static pthread_barrier_t bar;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
typedef struct { int id; double ns; unsigned x; } job_t;
static void *run(void *a){ job_t *j=a; cpu_set_t s; CPU_ZERO(&s); CPU_SET(j->id,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  unsigned x=j->id+1; pthread_barrier_wait(&bar); double t0=now();
  for(long i=0;i<iters;i++){ x=x*1103515245u+12345u; x^=x>>7; }
  j->ns=(now()-t0)/iters*1e9; j->x=x; return NULL; }
int main(int argc,char**argv){ int th=atoi(argv[1]); pthread_barrier_init(&bar,NULL,th); pthread_t t[64]; job_t j[64]; double w=0,b=1e9;
  for(int i=0;i<th;i++){ j[i].id=i; pthread_create(&t[i],NULL,run,&j[i]); }
  for(int i=0;i<th;i++){ pthread_join(t[i],NULL); if(j[i].ns>w) w=j[i].ns; if(j[i].ns<b) b=j[i].ns; }
  printf("spin: %2d threads: ns/step slowest %.3f fastest %.3f (x %u)\n",th,w,b,j[0].x); return 0; }
