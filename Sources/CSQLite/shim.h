#ifndef DATAINGEST_CSQLITE_SHIM_H
#define DATAINGEST_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: SQLite copies the bound value.
static inline sqlite3_destructor_type dataingest_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// SQLITE_STATIC: the bound value outlives the statement step; SQLite does not copy it.
static inline sqlite3_destructor_type dataingest_sqlite_static(void) {
    return SQLITE_STATIC;
}

/// sqlite3_config is variadic; these fixed-argument wrappers are what Swift can call.
static inline int dataingest_sqlite_config_multithread(void) {
    return sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
}

/// SQLITE_CONFIG_MEMSTATUS: with memory statistics on (Debian's default),
/// every SQLite allocation takes a process-wide mutex. Must run before
/// SQLite is initialized (the first open); later it returns SQLITE_MISUSE
/// and changes nothing.
static inline int dataingest_sqlite_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}

static inline int dataingest_sqlite_db_config_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}
#endif
