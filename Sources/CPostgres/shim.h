#ifndef DATAINGEST_CPOSTGRES_SHIM_H
#define DATAINGEST_CPOSTGRES_SHIM_H
// Debian installs libpq's headers under /usr/include/postgresql.
#include <postgresql/libpq-fe.h>
#endif
