/* proxy/cred/cred.h */
