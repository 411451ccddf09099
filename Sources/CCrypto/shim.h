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

/// AES-256-GCM for the segment store's encryption at rest. The GCM control
/// codes are nested macros; these wrappers keep the Swift side simple.
static inline const EVP_CIPHER *dataingest_evp_aes_256_gcm(void) { return EVP_aes_256_gcm(); }
static inline int dataingest_gcm_set_ivlen(EVP_CIPHER_CTX *ctx, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, length, NULL);
}
static inline int dataingest_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, length, tag);
}
static inline int dataingest_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, length, tag);
}
#endif
