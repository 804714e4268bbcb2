/*
 * sqlite-floor: what C SQLite itself does with the SQL sink's rows, as a
 * floor for BenchmarkWrite/sqlite (docs/performance.md, "A warm broker,
 * PostgreSQL's COPY, and the SQL writers on large tables").
 *
 * The table, indexes, row and pragmas are those the sink makes for the
 * benchmark's Bench/1 event; each row gets a new random uuid. One prepared
 * single-row INSERT OR IGNORE, static binds, one transaction a batch;
 * after PREFILL rows (10,000-row transactions, rounded down to a multiple
 * of 10,000) and one untimed batch, 100 batches are timed.
 *
 *   apt-get install libsqlite3-dev
 *   gcc -O2 -o /tmp/sqlite-floor scripts/floors/sqlite-floor.c -lsqlite3
 *   /tmp/sqlite-floor [page_size 4096] [prefill 0] [batch 1000] [cache_kib 16384] [file /tmp/sqlite-floor.db]
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *ddl[] = {
	"CREATE TABLE \"Bench_1\" (\"id\" INTEGER PRIMARY KEY, \"uuid\" TEXT NOT NULL, \"dt\" TEXT, \"timestamp\" TEXT,"
	" \"schema\" TEXT, \"revision\" INTEGER, \"topic\" TEXT, \"wiki\" TEXT, \"webHost\" TEXT, \"recvFrom\" TEXT,"
	" \"seqId\" INTEGER, \"userAgent\" TEXT, \"clientIp\" TEXT, \"event_action\" TEXT, \"event_editor\" TEXT,"
	" \"event_isAnon\" INTEGER, \"event_isOversample\" INTEGER, \"event_language\" TEXT, \"event_loadTime\" REAL,"
	" \"event_pageId\" INTEGER, \"event_pageNs\" INTEGER, \"event_pageTitle\" TEXT, \"event_platform\" TEXT,"
	" \"event_referrer\" TEXT, \"event_revId\" INTEGER, \"event_screen\" TEXT, \"event_screen_density\" REAL,"
	" \"event_screen_height\" INTEGER, \"event_screen_width\" INTEGER, \"event_sessionToken\" TEXT, \"event_skin\" TEXT,"
	" \"event_tags\" TEXT, \"event_timing\" REAL, \"event_userEditCount\" INTEGER, \"event_userId\" INTEGER,"
	" \"event_version\" INTEGER, UNIQUE (\"uuid\"))",
	"CREATE INDEX \"Bench_1_dt_idx\" ON \"Bench_1\" (\"dt\")",
	"CREATE INDEX \"Bench_1_timestamp_idx\" ON \"Bench_1\" (\"timestamp\")",
};

/* The row after "id": T text, I integer, R real, N null; seqId is 'S', uuid 'U'. */
static const char types[] = "UTTTITTTTSTTTTIITRIITTTITRIITTTRIII";
static const char *text[] = {0, "2013-01-21T18:10:34Z", "20130121181034", "Bench", 0, "eventlogging_Bench", "enwiki",
	"en.m.wikipedia.org", "cp1001", 0, "Mozilla/5.0 (\xe2\x98\x86 \xe5\xbd\xa1)",
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "saveSuccess", "visualeditor", 0, 0, "en", 0, 0, 0,
	"Main Page \xe2\x98\x86 \xe5\xbd\xa1", "desktop", "https://en.wikipedia.org/wiki/Special:Search?search=eventlogging", 0,
	0, 0, 0, 0, "5f8a2b1c9d3e4f60718293a4b5c6d7e8", "vector-2022", "[\"visualeditor\",\"mobile edit\"]", 0, 0, 0, 0};
static const sqlite3_int64 ints[] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1234567, 0, 0, 0, 0, 987654321,
	0, 0, 1080, 1920, 0, 0, 0, 0, 1500, 4242, 1};
static const double reals[] = {[17] = 0.875, [25] = 1.5, [31] = 1234.5};

static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static void ex(sqlite3 *db, const char *s) {
	char *e = 0;
	if (sqlite3_exec(db, s, 0, 0, &e)) { fprintf(stderr, "%s: %s\n", s, e); exit(1); }
}

int main(int argc, char **argv) {
	int ps = argc > 1 ? atoi(argv[1]) : 4096;
	long pre = argc > 2 ? atol(argv[2]) : 0;
	int bsz = argc > 3 ? atoi(argv[3]) : 1000;
	int cache = argc > 4 ? atoi(argv[4]) : 16384;
	const char *path = argc > 5 ? argv[5] : "/tmp/sqlite-floor.db";
	char b[512];
	int n = (int)strlen(types);
	snprintf(b, sizeof b, "%s-wal", path); unlink(b);
	snprintf(b, sizeof b, "%s-shm", path); unlink(b);
	unlink(path);
	sqlite3 *db;
	if (sqlite3_open(path, &db)) { fprintf(stderr, "open %s\n", path); return 1; }
	snprintf(b, sizeof b, "pragma page_size=%d", ps); ex(db, b);
	snprintf(b, sizeof b, "pragma cache_size=-%d", cache); ex(db, b);
	ex(db, "pragma temp_store=memory"); ex(db, "pragma journal_mode=wal"); ex(db, "pragma synchronous=normal");
	for (size_t i = 0; i < sizeof ddl / sizeof *ddl; i++) ex(db, ddl[i]);
	char sql[4096] = "INSERT OR IGNORE INTO \"Bench_1\" SELECT NULL";
	for (int i = 0; i < n; i++) strcat(sql, ", ?");
	sqlite3_stmt *ins;
	/* SELECT NULL, ?...: the same as naming every column after "id". */
	if (sqlite3_prepare_v2(db, sql, -1, &ins, 0)) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); return 1; }
	long seq = 0;
	char uuid[40];
	double t0 = 0, c0 = 0;
	srandom((unsigned)time(0));
	for (long bt = -(pre / 10000); bt < 101; bt++) {
		int rows = bt < 0 ? 10000 : bsz;
		if (bt == 1) { t0 = now(CLOCK_MONOTONIC); c0 = now(CLOCK_PROCESS_CPUTIME_ID); }
		ex(db, "BEGIN IMMEDIATE");
		for (int r = 0; r < rows; r++) {
			seq++;
			/* 32 hex digits, as capsule.UUID writes them */
			snprintf(uuid, sizeof uuid, "%08lx%04lx5%03lxa%03lx%012lx", (long)random(), (long)(random() & 0xffff),
				(long)(random() & 0xfff), (long)(random() & 0xfff), ((long)random() << 16) ^ random());
			for (int i = 0; i < n; i++) {
				switch (types[i]) {
				case 'U': sqlite3_bind_text(ins, i + 1, uuid, -1, SQLITE_TRANSIENT); break;
				case 'S': sqlite3_bind_int64(ins, i + 1, seq); break;
				case 'T': text[i] ? sqlite3_bind_text(ins, i + 1, text[i], -1, SQLITE_STATIC) : sqlite3_bind_null(ins, i + 1); break;
				case 'I': sqlite3_bind_int64(ins, i + 1, ints[i]); break;
				case 'R': sqlite3_bind_double(ins, i + 1, reals[i]); break;
				}
			}
			if (sqlite3_step(ins) != SQLITE_DONE) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); return 1; }
			sqlite3_reset(ins);
		}
		ex(db, "COMMIT");
	}
	double t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("C SQLite %s, page_size %d, cache %d KiB, %ld rows before, batches of %d: %.0f rows/s, %.2f cpu-us/row\n",
		sqlite3_libversion(), ps, cache, pre / 10000 * 10000 + bsz, bsz, 100.0 * bsz / (t1 - t0), (c1 - c0) * 1e6 / (100.0 * bsz));
	sqlite3_close(db);
	unlink(path);
	return 0;
}
