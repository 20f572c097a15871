# The keyed hash: AES-128 rounds (aes.h, aes.c: the key schedule) and
# SipHash-1-3 (hash.h), over a key's canonical bytes. The front end hashes
# with it (conntab_hash(), the cursor's seal); the hash backends index with
# it; the trie needs none.
lib_libconntab_la_SOURCES += \
	lib/hash/aes.c lib/hash/aes.h lib/hash/hash.h
