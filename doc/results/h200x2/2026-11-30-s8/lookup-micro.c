#define _GNU_SOURCE
#include "registry.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef DEREF
#define DEREF 0
#endif
static int stride=1;
#ifndef LIVE_N
#define LIVE_N 10000
#endif
enum { LIVE = LIVE_N };
static symaddr_registry_t reg;
static symaddr_registration_t **regs;
static long calls;
static pthread_barrier_t bar;
static int cpus[64];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
typedef struct { int id; double ns; long wrong; } job_t;
static long loop(long n, unsigned *xp){ unsigned x=*xp; long wrong=0; symaddr_registration_t *r;
  for (long i=0;i<n;i++){ x=x*1103515245u+12345u; uint64_t q=regs[x%LIVE]->map.range_base+(x>>8)%256; if(symaddr_registry_lookup(&reg,(void*)q,&r)||(DEREF ? q-r->map.range_base>=r->map.range_bytes : r!=regs[x%LIVE])) wrong++; }
  *xp=x; return wrong; }
static void *run(void *a){ job_t *j=a; unsigned x=77u*j->id+1;
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpus[j->id], &s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  j->wrong=loop(calls/4,&x); pthread_barrier_wait(&bar); double t0=now(); j->wrong+=loop(calls,&x);
  j->ns=(now()-t0)/calls*1e9; return NULL;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){ int th=argc>1?atoi(argv[1]):1; calls=argc>2?atol(argv[2]):1000000; int rounds=argc>3?atoi(argv[3]):7; stride=argc>4?atoi(argv[4]):1;
  cpu_set_t set; sched_getaffinity(0,sizeof set,&set); int n=0;
  for(int c=0;c<CPU_SETSIZE&&n<th;c++){ if(!CPU_ISSET(c,&set)) continue; char p[96]; int f=c; snprintf(p,96,"/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",c); FILE*F=fopen(p,"r"); if(F){ if(fscanf(F,"%d",&f)!=1) f=c; fclose(F);} if(f==c && c%stride==0) cpus[n++]=c; }
  for(int t=n;t<th;t++) cpus[t]=cpus[t%(n?n:1)];
  symaddr_registry_init(&reg); regs=calloc(LIVE,sizeof *regs);
  for(int i=0;i<LIVE;i++){ regs[i]=calloc(1,sizeof **regs); regs[i]->map.range_base=0x7f0000000000ull+ (uint64_t)i*256; regs[i]->map.range_bytes=256; if(symaddr_registry_insert(&reg,regs[i])) return 1; }
  pthread_barrier_init(&bar,NULL,th); pthread_t t[64]; job_t j[64]; double worst[64]; long wrong=0;
  for(int r=0;r<rounds;r++){ worst[r]=0;
  for(int i=0;i<th;i++){ j[i].id=i; pthread_create(&t[i],NULL,run,&j[i]); }
  for(int i=0;i<th;i++){ pthread_join(t[i],NULL); if(j[i].ns>worst[r]) worst[r]=j[i].ns; wrong+=j[i].wrong; } }
  printf("%s threads %d cores %d stride %d deref %d: rounds", argv[0], th, n, stride, DEREF); for(int r=0;r<rounds;r++) printf(" %.1f",worst[r]);
  qsort(worst,rounds,sizeof(double),cmp); printf("  median %.1f wrong %ld\n",worst[rounds/2],wrong);
  return 0; }
