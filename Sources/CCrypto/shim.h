#ifndef DATAINGEST_CCRYPTO_SHIM_H
#define DATAINGEST_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/kdf.h>

/// EVP_MD_CTX_create and friends are macros in some OpenSSL versions; these
/// wrappers give Swift stable functions to call.
static inline const EVP_MD *dataingest_evp_sha256(void) { return EVP_sha256(); }
#endif
