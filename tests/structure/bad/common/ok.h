/* common/ok.h */
