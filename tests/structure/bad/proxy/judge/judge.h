/* proxy/judge/judge.h */
