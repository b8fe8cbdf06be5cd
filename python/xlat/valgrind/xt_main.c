/* xlat-trace: a valgrind tool that writes a program's instructions and memory accesses for
   `xlat trace`, in valgrind lackey's text (`I  addr,size`, ` L addr,size`, ` S addr,size`,
   ` M addr,size`; hex addresses, decimal sizes), so that xlat's lackey reader converts it.

   What it adds to lackey, and why it exists: lackey prints every access with a write(2) of
   its own, so tracing runs at the speed of the pipe (1.3-1.5 M references a second); this
   tool writes 1 MB at a time. And it leaves out the first --skip references itself (a
   program's start-up), counted as xlat's converter counts them, so that they are neither
   formatted nor written: a trace made with --skip=N here converts to the same references
   as lackey's whole log converted with `skip = N`.

   Skipping costs little: each group of events adds its references to a counter in the
   instrumented code itself, and the calls that record the events are guarded by that
   counter, taken only once it is within COUNT_MARGIN references of the skip's end; from
   their first call on they count event by event, so that the skip ends exactly where the
   converter's would. (--count prints the counter.)

   The events are the ones lackey records, in the same order: an instruction per IMark,
   loads (plain, guarded, from dirty helpers and compare-and-swaps), stores likewise, and a
   load followed, within the same pending group of four events, by an unguarded store of the
   same size to the same address becomes one modify. Events are instrumented in groups
   flushed before every side exit and at the end of a block, as lackey does, because that
   decides which load/store pairs merge.

   The code executed before the window (--executed=PATH): the pages of every block translated
   before the first reference written, a block being translated when it first runs, so at
   no cost per instruction; written to PATH as `START END` lines (hexadecimal, [START, END),
   ascending) when the window begins, for `xlat trace`'s sidecar: which code pages the
   program had run (and so set their accessed bits), where /proc/PID/pagemap shows only
   which were mapped, fault-around's neighbours among them.

   The pages resident when the window begins (--resident=PATH): of every mapping of the
   program's (not valgrind's, nor inaccessible ones), those /proc/self/pagemap shows present or
   swapped at the window's first reference, as `START END` lines likewise: read here, at that
   reference, the program's own memory's are the same from one tracing to the next (a file
   mapping's depend on what the page cache had ready when a fault mapped its neighbours).

   Several windows in one run (--windows=K --every=P --window=N): window k begins at
   reference SKIP + k*P and holds N references (the event that reaches N is written whole;
   the reader cuts the window there); each ends with a `# window` line, the gaps between them
   are left out as the skip is, and --executed and --resident then name one file per window,
   PATH.0 to PATH.K-1 (the code run, the pages resident, before that window). After the last
   window the trace ends (the program runs on, untraced). One pass through a long program
   gives a systematic sample of it.

   The system calls that change the program's mappings, in the window, as lines of their own
   where they happen among the references: ` U addr,len` (munmap; madvise MADV_DONTNEED or
   MADV_REMOVE: the pages are dropped and fault again when touched), ` F addr,len` (madvise
   MADV_FREE), ` P addr,len` (mprotect without PROT_WRITE), ` W addr,len` (mprotect with it);
   len in bytes, decimal. lackey has no such lines: xlat's reader turns them into OS calls.

   Options: --out=PATH (required; a file or a FIFO), --skip=N (references left out),
   --fetch=yes|no (whether an instruction counts as a reference when skipping: xlat counts
   each instruction as a fetch unless `xlat trace --no-fetch`), --count=yes (at exit, print
   the references the whole run made, skipped or not, and its instructions: where to place a
   window), --windows=K, --every=P and --window=N (above). A forked child is not
   traced (its parent's trace goes on). Built by python/xlat/valgrind.py against the
   installed valgrind's headers and libraries. */

#include "pub_tool_basics.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* ---- options ---- */

static const HChar* clo_out = NULL;
static const HChar* clo_executed = NULL;
static const HChar* clo_resident = NULL;
static Long clo_skip = 0;
static Bool clo_fetch = True;
static Bool clo_count = False;
static Long clo_windows = 1;
static Long clo_every = 0;
static Long clo_window = 0;

static Bool xt_process_cmd_line_option(const HChar* arg)
{
   if VG_STR_CLO(arg, "--out", clo_out) {
   } else if VG_STR_CLO(arg, "--executed", clo_executed) {
   } else if VG_STR_CLO(arg, "--resident", clo_resident) {
   } else if VG_BINT_CLO(arg, "--skip", clo_skip, 0, 0x7fffffffffffffffLL) {
   } else if VG_BOOL_CLO(arg, "--fetch", clo_fetch) {
   } else if VG_BOOL_CLO(arg, "--count", clo_count) {
   } else if VG_BINT_CLO(arg, "--windows", clo_windows, 1, 1000000) {
   } else if VG_BINT_CLO(arg, "--every", clo_every, 0, 0x7fffffffffffffffLL) {
   } else if VG_BINT_CLO(arg, "--window", clo_window, 0, 0x7fffffffffffffffLL) {
   } else {
      return False;
   }
   return True;
}

static void xt_print_usage(void)
{
   VG_(printf)(
      "    --out=PATH        write the trace here (a file or a FIFO) [required]\n"
      "    --skip=N          leave out the first N references [0]\n"
      "    --fetch=yes|no    an instruction is a reference when skipping [yes]\n"
      "    --count=yes|no    print the run's references and instructions at exit [no]\n"
      "    --executed=PATH   write the code pages run before the window here [none]\n"
      "    --resident=PATH   write the program's pages resident when the window begins here [none]\n"
      "    --windows=K       trace K windows, --every=P references apart, of --window=N each [1]\n");
}

static void xt_print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/* ---- output: lackey's lines, written 1 MB at a time ---- */

#define OUT_SIZE (1 << 20)
static HChar out_buf[OUT_SIZE];
static Int out_used = 0;
static Int out_fd = -1;
/* References still to leave out. */
static ULong skip_left = 0;
/* References (as the converter counts them) and instructions of the whole run so far, as the
   instrumented code counts them at the end of each group of events. */
static ULong seen_refs = 0;
static ULong seen_instrs = 0;

static void out_flush(void)
{
   Int at = 0;
   while (out_fd >= 0 && at < out_used) {
      Int n = VG_(write)(out_fd, out_buf + at, out_used - at);
      if (n <= 0) {
         /* The reader is gone (xlat stops reading at --refs): nothing more to write. */
         VG_(close)(out_fd);
         out_fd = -1;
         break;
      }
      at += n;
   }
   out_used = 0;
}

static const HChar HEX[] = "0123456789abcdef";

/* ---- the code pages run before the window (--executed) ---- */

/* An open-addressed set of page numbers (0 free: page 0 holds no code), grown at half full. */
static ULong* code_pages = NULL;
static ULong code_cap = 0;
static ULong code_used = 0;
/* The window traced or waited for (0 to --windows - 1; --windows once the last has ended),
   its first reference, and whether that has been written. */
static ULong window_no = 0;
static ULong window_start = 0;
static Bool window_begun = False;
/* Windows begun so far: once the last has, blocks are not recorded. */
static ULong windows_begun = 0;
/* (With --window) the references the window still holds; the event that reaches 0 is its last. */
static Long window_left = 0;
/* In a forked child, whose references are not in the trace. */
static Bool traced_child = False;

static void code_page_insert(ULong page)
{
   ULong i;
   if (2 * (code_used + 1) > code_cap) {
      ULong old_cap = code_cap, j;
      ULong* old = code_pages;
      code_cap = code_cap ? 2 * code_cap : 1 << 12;
      code_pages = VG_(calloc)("xt.code_pages", code_cap, sizeof(ULong));
      code_used = 0;
      for (j = 0; j < old_cap; j++) {
         if (old[j] != 0) {
            code_page_insert(old[j]);
         }
      }
      if (old != NULL) {
         VG_(free)(old);
      }
   }
   i = (page * 0x9e3779b97f4a7c15ULL) & (code_cap - 1);
   while (code_pages[i] != 0) {
      if (code_pages[i] == page) {
         return;
      }
      i = (i + 1) & (code_cap - 1);
   }
   code_pages[i] = page;
   code_used++;
}

static Int cmp_page(const void* a, const void* b)
{
   ULong x = *(const ULong*)a, y = *(const ULong*)b;
   return x < y ? -1 : x > y ? 1 : 0;
}

/* Runs of pages as `START END` lines: a run is open from `run_lo` to `run_hi` (0: none). */
static Int runs_fd = -1;
static Addr run_lo = 0, run_hi = 0;

static void run_add(Addr page)
{
   HChar line[48];
   if (run_hi != 0 && page == run_hi) {
      run_hi += 4096;
      return;
   }
   if (run_hi != 0) {
      VG_(write)(runs_fd, line, VG_(sprintf)(line, "%lx %lx\n", run_lo, run_hi));
   }
   run_lo = page;
   run_hi = page + 4096;
}

static void run_close(void)
{
   run_add(0); /* (page 0 never follows a run: it flushes the last) */
   run_lo = run_hi = 0;
}

/* The program's pages present or swapped now, by /proc/self/pagemap, to --resident's file. */
#define MAX_SEGMENTS 65536
static Addr seg_starts[MAX_SEGMENTS];
static ULong pm_buf[512];

/* `path`, or with several windows `path.K` for window K: in `buf`. */
static const HChar* window_path(const HChar* path, HChar* buf, SizeT size)
{
   if (clo_windows == 1) {
      return path;
   }
   VG_(snprintf)(buf, size, "%s.%llu", path, window_no);
   return buf;
}

static void write_resident(void)
{
   Int n, i, pm;
   HChar buf[4096];
   const HChar* path = window_path(clo_resident, buf, sizeof buf);
   SysRes r = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0600);
   SysRes p = VG_(open)("/proc/self/pagemap", VKI_O_RDONLY, 0);
   if (sr_isError(r) || sr_isError(p)) {
      VG_(fmsg)("xlat-trace: cannot record the resident pages (%s)\n", sr_isError(r) ? path : "/proc/self/pagemap");
      if (!sr_isError(r)) {
         VG_(close)((Int)sr_Res(r));
      }
      return;
   }
   runs_fd = (Int)sr_Res(r);
   pm = (Int)sr_Res(p);
   n = VG_(am_get_segment_starts)(SkAnonC | SkFileC | SkShmC, seg_starts, MAX_SEGMENTS);
   for (i = 0; i < n; i++) {
      NSegment const* seg = VG_(am_find_nsegment)(seg_starts[i]);
      Addr a;
      if (seg == NULL || !(seg->hasR || seg->hasW || seg->hasX)) {
         continue;
      }
      for (a = seg->start; a <= seg->end;) {
         ULong pages = ((seg->end + 1 - a) >> 12) < 512 ? ((seg->end + 1 - a) >> 12) : 512, k;
         Int got;
         VG_(lseek)(pm, (Off64T)((a >> 12) * 8), VKI_SEEK_SET);
         got = VG_(read)(pm, pm_buf, (Int)(pages * 8));
         if (got <= 0) {
            break;
         }
         for (k = 0; k < (ULong)got / 8; k++) {
            if (pm_buf[k] >> 62) {
               run_add(a + (k << 12));
            }
         }
         a += pages << 12;
      }
   }
   run_close();
   VG_(close)(pm);
   VG_(close)(runs_fd);
   runs_fd = -1;
}

/* A window begins: the code pages run so far go to --executed's file, as runs, and the
   pages resident now to --resident's. */
static void begin_window(void)
{
   SysRes r;
   ULong i, n = 0;
   ULong* pages;
   HChar line[48], buf[4096];
   const HChar* path;
   window_begun = True;
   windows_begun++;
   window_left = clo_window;
   if (clo_resident != NULL) {
      write_resident();
   }
   if (clo_executed == NULL) {
      return;
   }
   /* (A copy, sorted: the set goes on recording blocks for the windows after this one.) */
   pages = VG_(malloc)("xt.executed", (code_used + 1) * sizeof(ULong));
   for (i = 0; i < code_cap; i++) {
      if (code_pages[i] != 0) {
         pages[n++] = code_pages[i];
      }
   }
   VG_(ssort)(pages, n, sizeof(ULong), cmp_page);
   path = window_path(clo_executed, buf, sizeof buf);
   r = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0600);
   if (sr_isError(r)) {
      VG_(fmsg)("xlat-trace: cannot open %s for writing\n", path);
      VG_(free)(pages);
      return;
   }
   for (i = 0; i < n;) {
      ULong j = i + 1;
      while (j < n && pages[j] == pages[j - 1] + 1) {
         j++;
      }
      VG_(write)((Int)sr_Res(r), line, VG_(sprintf)(line, "%llx %llx\n", pages[i] << 12, (pages[j - 1] + 1) << 12));
      i = j;
   }
   VG_(close)((Int)sr_Res(r));
   VG_(free)(pages);
}

/* How many references xlat's reader makes of an access: one per 64 bytes (at least one). */
static inline ULong pieces(SizeT size)
{
   return size <= 64 ? 1 : (size + 63) / 64;
}

/* A call's OS records in xlat's reader: one per 65,535 pages it covers. */
#define OS_CALL_PAGES 65535ULL

static inline ULong call_records(Addr addr, SizeT len)
{
   ULong first = addr >> 12, pages = ((addr + len + 4095) >> 12) - first;
   return (pages + OS_CALL_PAGES - 1) / OS_CALL_PAGES;
}

/* The references the reader makes of a line (see emit). */
static inline ULong line_refs(HChar kind, Addr addr, SizeT size)
{
   switch (kind) {
   case 'I':
      return clo_fetch ? 1 : 0;
   case 'L':
   case 'S':
      return pieces(size);
   case 'M':
      return 2 * pieces(size);
   default:
      return call_records(addr, size);
   }
}

/* One line: `I  addr,size` for an instruction, ` K addr,size` for K = L, S or M (an access)
   or U, F, P or W (a system call). */
static inline void emit(HChar kind, Addr addr, SizeT size)
{
   HChar* p;
   HChar tmp[24];
   Int n = 0;
   if (UNLIKELY(!window_begun)) {
      begin_window();
   }
   if (clo_window > 0) {
      window_left -= (Long)line_refs(kind, addr, size);
   }
   if (out_used > OUT_SIZE - 64) {
      out_flush();
   }
   p = out_buf + out_used;
   if (kind == 'I') {
      *p++ = 'I';
      *p++ = ' ';
   } else {
      *p++ = ' ';
      *p++ = kind;
   }
   *p++ = ' ';
   do {
      tmp[n++] = HEX[addr & 0xf];
      addr >>= 4;
   } while (addr != 0);
   while (n > 0) {
      *p++ = tmp[--n];
   }
   *p++ = ',';
   do {
      tmp[n++] = (HChar)('0' + size % 10);
      size /= 10;
   } while (size != 0);
   while (n > 0) {
      *p++ = tmp[--n];
   }
   *p++ = '\n';
   out_used = (Int)(p - out_buf);
}

/* ---- the helpers the instrumented code calls ---- */

/* The recording calls begin at a group's start, within COUNT_MARGIN references of a
   window's first: what is left of the skip is counted from there, event by event. */
static Bool recording = False;
/* How many references before a window's first the recording calls begin: more than a group
   of events can hold (four events of at most 512 bytes, a modify counting twice: 64). */
#define COUNT_MARGIN 1024
/* The counter's value from which the recording calls are taken (read by the instrumented
   code at each group: it moves from window to window). */
static ULong record_from = 0;

static inline void start_recording(void)
{
   recording = True;
   skip_left = window_start > seen_refs ? window_start - seen_refs : 0;
}

static void out_close(void)
{
   out_flush();
   if (out_fd >= 0) {
      VG_(close)(out_fd);
      out_fd = -1;
   }
}

/* The window has its references: a `# window` line, then the calls wait for the next one
   (the rest of this group's calls find the counter short of it), or, after the last, the
   trace ends. */
static void end_window(void)
{
   static const HChar marker[] = "# window\n";
   if (out_used > OUT_SIZE - 64) {
      out_flush();
   }
   VG_(memcpy)(out_buf + out_used, marker, sizeof marker - 1);
   out_used += (Int)(sizeof marker - 1);
   window_begun = False;
   recording = False;
   window_no++;
   if (window_no >= (ULong)clo_windows) {
      record_from = ~0ULL;
      out_close();
      return;
   }
   window_start = (ULong)clo_skip + window_no * (ULong)clo_every;
   record_from = window_start > COUNT_MARGIN ? window_start - COUNT_MARGIN : 0;
   /* (Written now: nothing more is written until the next window, and the reader closes this
      one's file at its end.) */
   out_flush();
}

/* The window's end, if the event before this one completed it (with --window). */
static inline void end_window_if_whole(void)
{
   if (UNLIKELY(window_begun && clo_window > 0 && window_left <= 0)) {
      end_window();
   }
}

/* Whether the helpers record this event: not far from a window (the rest of a group that
   began before the last window's end, or any after the last), else from COUNT_MARGIN before
   the next window on, the window's end written first if it has come. */
static inline Bool tracing(void)
{
   end_window_if_whole();
   if (UNLIKELY(!recording)) {
      if (seen_refs < record_from) {
         return False;
      }
      start_recording();
   }
   return True;
}

static VG_REGPARM(2) void on_instr(Addr addr, SizeT size)
{
   if (UNLIKELY(!tracing())) {
      return;
   }
   if (UNLIKELY(skip_left > 0)) {
      if (clo_fetch) {
         skip_left--;
      }
      return;
   }
   emit('I', addr, size);
}

/* A load or a store; when the skip ends inside it, the rest of its 64-byte pieces. */
static inline void data_access(HChar kind, Addr addr, SizeT size)
{
   if (UNLIKELY(skip_left > 0)) {
      ULong n = pieces(size);
      if (n <= skip_left) {
         skip_left -= n;
         return;
      }
      addr += 64 * skip_left;
      size -= 64 * skip_left;
      skip_left = 0;
   }
   emit(kind, addr, size);
}

static VG_REGPARM(2) void on_load(Addr addr, SizeT size)
{
   if (UNLIKELY(!tracing())) {
      return;
   }
   data_access('L', addr, size);
}

static VG_REGPARM(2) void on_store(Addr addr, SizeT size)
{
   if (UNLIKELY(!tracing())) {
      return;
   }
   data_access('S', addr, size);
}

/* A modify is its load's pieces, then its store's: the skip may end in either half. */
static VG_REGPARM(2) void on_modify(Addr addr, SizeT size)
{
   if (UNLIKELY(!tracing())) {
      return;
   }
   if (UNLIKELY(skip_left > 0)) {
      ULong n = pieces(size);
      if (2 * n <= skip_left) {
         skip_left -= 2 * n;
         return;
      }
      if (skip_left >= n) {
         skip_left -= n;
         data_access('S', addr, size);
         return;
      }
      data_access('L', addr, size);
      emit('S', addr, size);
      return;
   }
   emit('M', addr, size);
}

/* ---- instrumentation: lackey's events, in groups of four ---- */

typedef enum { Ev_Instr, Ev_Load, Ev_Store, Ev_Modify } EvKind;

typedef struct {
   EvKind kind;
   IRExpr* addr;
   Int size;
   IRExpr* guard; /* NULL: always */
} Event;

#define N_PENDING 4
static Event pending[N_PENDING];
static Int n_pending = 0;

static ULong event_refs(const Event* ev)
{
   switch (ev->kind) {
   case Ev_Instr:
      return clo_fetch ? 1 : 0;
   case Ev_Modify:
      return 2 * pieces((SizeT)ev->size);
   default:
      return pieces((SizeT)ev->size);
   }
}

static IRTemp new_tmp(IRSB* sb, IRType ty, IRExpr* e)
{
   IRTemp t = newIRTemp(sb->tyenv, ty);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
   return t;
}

/* `*counter += add`, in the instrumented code. */
static void add_to(IRSB* sb, ULong* counter, IRExpr* now, IRExpr* add)
{
   IRTemp sum = new_tmp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, now, add));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)counter), IRExpr_RdTmp(sum)));
}

/* The pending group: its recording calls, each taken once the counter has reached
   `record_from` (and its own guard holds), then the counter's update. */
static void flush_events(IRSB* sb)
{
   Int i;
   IRTemp before, from, on;
   IRExpr* refs;
   ULong instrs = 0, fixed = 0;
   if (n_pending == 0) {
      return;
   }
   before = new_tmp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&seen_refs)));
   from = new_tmp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&record_from)));
   on = new_tmp(sb, Ity_I1, IRExpr_Binop(Iop_CmpLE64U, IRExpr_RdTmp(from), IRExpr_RdTmp(before)));
   refs = IRExpr_RdTmp(before);
   for (i = 0; i < n_pending; i++) {
      Event* ev = &pending[i];
      const HChar* name;
      void* fn;
      IRDirty* di;
      ULong n = event_refs(ev);
      switch (ev->kind) {
      case Ev_Instr:
         name = "on_instr";
         fn = on_instr;
         instrs++;
         break;
      case Ev_Load:
         name = "on_load";
         fn = on_load;
         break;
      case Ev_Store:
         name = "on_store";
         fn = on_store;
         break;
      default:
         name = "on_modify";
         fn = on_modify;
         break;
      }
      di = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), mkIRExprVec_2(ev->addr, mkIRExpr_HWord(ev->size)));
      if (ev->guard != NULL) {
         di->guard = IRExpr_RdTmp(new_tmp(sb, Ity_I1, IRExpr_Binop(Iop_And1, ev->guard, IRExpr_RdTmp(on))));
         /* (A guarded access counts only when it happens.) */
         refs = IRExpr_RdTmp(new_tmp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, refs,
            IRExpr_RdTmp(new_tmp(sb, Ity_I64, IRExpr_ITE(ev->guard, IRExpr_Const(IRConst_U64(n)), IRExpr_Const(IRConst_U64(0))))))));
      } else {
         di->guard = IRExpr_RdTmp(on);
         fixed += n;
      }
      /* The call reads the counter (start_recording): the update below must stay after it. */
      di->mFx = Ifx_Read;
      di->mAddr = mkIRExpr_HWord((HWord)&seen_refs);
      di->mSize = 8;
      addStmtToIRSB(sb, IRStmt_Dirty(di));
   }
   add_to(sb, &seen_refs, refs, IRExpr_Const(IRConst_U64(fixed)));
   if (instrs > 0) {
      IRTemp had = new_tmp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&seen_instrs)));
      add_to(sb, &seen_instrs, IRExpr_RdTmp(had), IRExpr_Const(IRConst_U64(instrs)));
   }
   n_pending = 0;
}

static void add_event(IRSB* sb, EvKind kind, IRExpr* addr, Int size, IRExpr* guard)
{
   if (n_pending == N_PENDING) {
      flush_events(sb);
   }
   pending[n_pending].kind = kind;
   pending[n_pending].addr = addr;
   pending[n_pending].size = size;
   pending[n_pending].guard = guard;
   n_pending++;
}

/* A store that follows an unguarded load of the same size from the same address in the
   pending group is a modify. */
static void add_store(IRSB* sb, IRExpr* addr, Int size)
{
   if (n_pending > 0) {
      Event* last = &pending[n_pending - 1];
      if (last->kind == Ev_Load && last->size == size && last->guard == NULL && eqIRAtom(last->addr, addr)) {
         last->kind = Ev_Modify;
         return;
      }
   }
   add_event(sb, Ev_Store, addr, size, NULL);
}

static IRSB* xt_instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout, const VexGuestExtents* vge,
                           const VexArchInfo* archinfo_host, IRType gWordTy, IRType hWordTy)
{
   IRSB* out;
   IRTypeEnv* tyenv = in->tyenv;
   Int i = 0;
   if (gWordTy != hWordTy) {
      VG_(tool_panic)("host/guest word size mismatch");
   }
   out = deepCopyIRSBExceptStmts(in);
   /* The preamble before the first instruction, as it is. */
   while (i < in->stmts_used && in->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(out, in->stmts[i]);
      i++;
   }
   n_pending = 0;
   for (; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp) {
         continue;
      }
      switch (st->tag) {
      case Ist_IMark:
         if (clo_executed != NULL && windows_begun < (ULong)clo_windows) {
            code_page_insert(st->Ist.IMark.addr >> 12);
            code_page_insert((st->Ist.IMark.addr + st->Ist.IMark.len - 1) >> 12);
         }
         add_event(out, Ev_Instr, mkIRExpr_HWord((HWord)st->Ist.IMark.addr), st->Ist.IMark.len, NULL);
         break;
      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load) {
            add_event(out, Ev_Load, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL);
         }
         break;
      }
      case Ist_Store:
         add_store(out, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)));
         break;
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         add_event(out, Ev_Store, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType loaded = Ity_INVALID, widened = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &widened, &loaded);
         add_event(out, Ev_Load, lg->addr, sizeofIRType(loaded), lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify) {
               add_event(out, Ev_Load, d->mAddr, d->mSize, NULL);
            }
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify) {
               add_store(out, d->mAddr, d->mSize);
            }
         }
         break;
      }
      case Ist_CAS: {
         /* A read and a write of the location, as lackey counts it. */
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL) {
            size *= 2;
         }
         add_event(out, Ev_Load, cas->addr, size, NULL);
         add_store(out, cas->addr, size);
         break;
      }
      case Ist_LLSC:
         if (st->Ist.LLSC.storedata == NULL) {
            add_event(out, Ev_Load, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
            flush_events(out);
         } else {
            add_store(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)));
         }
         break;
      case Ist_Exit:
         /* The events before a side exit are recorded whether it is taken or not. */
         flush_events(out);
         break;
      default:
         break;
      }
      addStmtToIRSB(out, st);
   }
   flush_events(out);
   return out;
}

/* ---- the system calls that change mappings (in the window) ---- */

#define XT_MADV_DONTNEED 4
#define XT_MADV_FREE 8
#define XT_MADV_REMOVE 9

static void xt_pre_syscall(ThreadId tid, UInt no, UWord* args, UInt n_args)
{
}

static void xt_post_syscall(ThreadId tid, UInt no, UWord* args, UInt n_args, SysRes res)
{
   HChar kind = 0;
   ULong first, n;
   Addr addr;
   if (traced_child || sr_isError(res) || n_args < 3 || args[1] == 0) {
      return;
   }
   if (no == __NR_munmap) {
      kind = 'U';
   } else if (no == __NR_madvise) {
      if (args[2] == XT_MADV_DONTNEED || args[2] == XT_MADV_REMOVE) {
         kind = 'U';
      } else if (args[2] == XT_MADV_FREE) {
         kind = 'F';
      }
   } else if (no == __NR_mprotect) {
      kind = (args[2] & VKI_PROT_WRITE) ? 'W' : 'P';
   }
   if (kind == 0) {
      return;
   }
   /* (Its OS records count as references, as the reader counts them, so that a skip ends
      where the reader's would.) */
   first = args[0] >> 12;
   n = call_records((Addr)args[0], (SizeT)args[1]);
   end_window_if_whole();
   if (!recording && seen_refs + n >= record_from) {
      start_recording();
   }
   seen_refs += n;
   if (!recording) {
      return; /* far from the window: counted only */
   }
   if (skip_left >= n) {
      skip_left -= n;
      return;
   }
   /* The skip ends inside this call (or before it): its records from there. */
   addr = (Addr)((first + skip_left * OS_CALL_PAGES) << 12);
   if (skip_left == 0) {
      addr = (Addr)args[0];
   }
   skip_left = 0;
   emit(kind, addr, (SizeT)(args[0] + args[1] - addr));
}

/* ---- start, fork and exit ---- */

static void before_fork(ThreadId tid)
{
   /* (Otherwise the child would write the parent's unwritten lines a second time.) */
   out_flush();
}

static void in_child(ThreadId tid)
{
   /* The parent's trace goes on; the child's references are not in it. */
   out_fd = -1;
   out_used = 0;
   traced_child = True;
}

static void xt_post_clo_init(void)
{
   SysRes r;
   if (clo_out == NULL) {
      VG_(fmsg)("xlat-trace: give the trace's path with --out=PATH\n");
      VG_(exit)(1);
   }
   r = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0600);
   if (sr_isError(r)) {
      VG_(fmsg)("xlat-trace: cannot open %s for writing\n", clo_out);
      VG_(exit)(1);
   }
   out_fd = (Int)sr_Res(r);
   if (clo_windows > 1 && (clo_window == 0 || clo_every < clo_window + 2 * COUNT_MARGIN)) {
      VG_(fmsg)("xlat-trace: --windows=K needs --window=N and --every=P of at least N + %d\n", 2 * COUNT_MARGIN);
      VG_(exit)(1);
   }
   window_start = (ULong)clo_skip;
   record_from = (ULong)clo_skip > COUNT_MARGIN ? (ULong)clo_skip - COUNT_MARGIN : 0;
   VG_(atfork)(before_fork, NULL, in_child);
}

static void xt_fini(Int exitcode)
{
   if (traced_child) {
      return;
   }
   /* (A window whose last event was the program's last is whole.) */
   end_window_if_whole();
   out_close();
   if (clo_count) {
      VG_(umsg)("xlattrace: %llu references, %llu instructions\n", seen_refs, seen_instrs);
   }
}

static void xt_pre_clo_init(void)
{
   VG_(details_name)("xlat-trace");
   VG_(details_version)(NULL);
   VG_(details_description)("a program's memory references for xlat, in lackey's format");
   VG_(details_copyright_author)("the xlat authors");
   VG_(details_bug_reports_to)("the xlat project");
   VG_(details_avg_translation_sizeB)(200);
   VG_(basic_tool_funcs)(xt_post_clo_init, xt_instrument, xt_fini);
   VG_(needs_command_line_options)(xt_process_cmd_line_option, xt_print_usage, xt_print_debug_usage);
   VG_(needs_syscall_wrapper)(xt_pre_syscall, xt_post_syscall);
}

VG_DETERMINE_INTERFACE_VERSION(xt_pre_clo_init)
