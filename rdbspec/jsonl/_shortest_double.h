/* repr(float) in C: the shortest decimal digits that read back to a double, written as Python's
   float repr writes them (Objects/floatobject.c float_repr: PyOS_double_to_string(x, 'r', 0,
   Py_DTSF_ADD_DOT_0) over David Gay's dtoa mode 0), with no allocation and no big integers.

   The digits come from the Ryu algorithm: Ulf Adams, "Ryu: fast float-to-string conversion",
   PLDI 2018, https://doi.org/10.1145/3192366.3192369, written here from the paper. A double is
   mv * 2^e2 with mv = 4 * m2 (e2 counts quarters of the step to its neighbours); the values that
   read back to it lie between the halfway points to them, mm = mv - 1 - mm_shift and mp = mv + 2
   (times 2^e2), the bounds included when m2 is even (a halfway point is read to the even
   neighbour). The bounds and the value itself, divided by 10^e10 and truncated (vm, vp, vr), come
   from one 64 x 128-bit product each against a 125-bit table entry of 5^i or 2^k / 5^q; e10 is
   chosen so that at least two multiples of 10 lie between vm and vp, so one digit is always
   dropped. Digits are then dropped while a shorter number stays inside the bounds, and the last
   one dropped rounds the rest (half to even when the value is exactly halfway), which gives
   dtoa's digits: the fewest, and of those the closest to the value.

   The tables are filled once, when the module including this header is imported
   (_jsonl_encode.pyx computes them from Python ints): sd_pow5[i] is 5^i scaled to 125 bits
   (truncated), sd_pow5_inv[q] is floor(2^(bits(5^q) - 1 + 125) / 5^q) + 1, each as {low, high}
   64-bit halves. Only one translation unit includes this header. */

#ifndef RDBSPEC_SHORTEST_DOUBLE_H
#define RDBSPEC_SHORTEST_DOUBLE_H

#include <stdint.h>
#include <string.h>

enum {
    SD_SPLIT_BITS = 125,     /* significant bits of a table entry */
    SD_POW5_COUNT = 326,     /* 5^i for i = -e2 - q, e2 < 0: i is at most 325 (e2 = -1076) */
    SD_POW5_INV_COUNT = 291, /* 2^k / 5^q for e2 >= 0: q is at most 290 (e2 = 969) */
    SD_REPR_SIZE = 32        /* room for any repr: "-1.2345678901234567e-308" is 24 bytes */
};

static uint64_t sd_pow5[SD_POW5_COUNT][2];
static uint64_t sd_pow5_inv[SD_POW5_INV_COUNT][2];

static inline void sd_set_pow5(int i, uint64_t low, uint64_t high) {
    sd_pow5[i][0] = low;
    sd_pow5[i][1] = high;
}

static inline void sd_set_pow5_inv(int q, uint64_t low, uint64_t high) {
    sd_pow5_inv[q][0] = low;
    sd_pow5_inv[q][1] = high;
}

/* The bit length of 5^e, for 0 <= e <= 3528. */
static inline int sd_pow5_bits(int e) {
    return (int)(((uint32_t)e * 1217359u) >> 19) + 1;
}

/* floor(log10(2^e)), for 0 <= e <= 1650. */
static inline int sd_log10_pow2(int e) {
    return (int)(((uint32_t)e * 78913u) >> 18);
}

/* floor(log10(5^e)), for 0 <= e <= 2620. */
static inline int sd_log10_pow5(int e) {
    return (int)(((uint32_t)e * 732923u) >> 20);
}

/* floor(m * entry / 2^shift) for a table entry {low, high}, 64 <= shift < 192: the low product's
   low half cannot carry into what the shift keeps. */
static inline uint64_t sd_mul_shift(uint64_t m, const uint64_t entry[2], int shift) {
    unsigned __int128 low = (unsigned __int128)m * entry[0];
    unsigned __int128 high = (unsigned __int128)m * entry[1];
    return (uint64_t)(((low >> 64) + high) >> (shift - 64));
}

/* How many times 5 divides x, x > 0. */
static inline int sd_pow5_factor(uint64_t x) {
    int count = 0;
    while (x % 5 == 0) {
        x /= 5;
        count++;
    }
    return count;
}

/* The shortest digits of a finite, nonzero double given by its bits without the sign: returns
   them as an integer d, with *exponent10 set so that the number is d * 10^*exponent10. */
static inline uint64_t sd_shortest(uint64_t bits, int* exponent10) {
    uint64_t fraction = bits & ((UINT64_C(1) << 52) - 1);
    int biased = (int)(bits >> 52);
    uint64_t m2 = biased ? fraction | UINT64_C(1) << 52 : fraction;
    int e2 = (biased ? biased : 1) - 1075 - 2; /* - 2: mv, mp, mm count quarters of 2^e2 */
    int bounds_in = (m2 & 1) == 0;
    /* just above a power of two the neighbour below is half as far as the one above */
    int mm_shift = fraction != 0 || biased <= 1;
    uint64_t mv = 4 * m2, mp = mv + 2, mm = mv - 1 - (uint64_t)mm_shift;
    uint64_t vr, vp, vm;
    int e10, vr_exact, vp_exact, vm_exact;
    if (e2 >= 0) {
        /* x * 2^e2 / 10^q = x * 2^(e2 - q) / 5^q, e2 >= q: exact when 5^q divides x */
        int q = sd_log10_pow2(e2) - (e2 > 3);
        int shift = q - e2 + SD_SPLIT_BITS + sd_pow5_bits(q) - 1;
        e10 = q;
        vr = sd_mul_shift(mv, sd_pow5_inv[q], shift);
        vp = sd_mul_shift(mp, sd_pow5_inv[q], shift);
        vm = sd_mul_shift(mm, sd_pow5_inv[q], shift);
        vr_exact = sd_pow5_factor(mv) >= q;
        vp_exact = sd_pow5_factor(mp) >= q;
        vm_exact = sd_pow5_factor(mm) >= q;
    } else {
        /* x * 2^e2 / 10^(q + e2) = x * 5^i / 2^q, i = -e2 - q: exact when 2^q divides x */
        int q = sd_log10_pow5(-e2) - (-e2 > 1);
        int i = -e2 - q;
        int shift = q - sd_pow5_bits(i) + SD_SPLIT_BITS;
        e10 = q + e2;
        vr = sd_mul_shift(mv, sd_pow5[i], shift);
        vp = sd_mul_shift(mp, sd_pow5[i], shift);
        vm = sd_mul_shift(mm, sd_pow5[i], shift);
        vr_exact = q <= __builtin_ctzll(mv);
        vp_exact = q <= __builtin_ctzll(mp);
        vm_exact = q <= __builtin_ctzll(mm);
    }
    if (vp_exact && !bounds_in) {
        vp--; /* the upper bound itself reads to the neighbour */
    }
    /* vm_in: vm, with the digits dropped so far, is exactly the lower bound, which reads back to
       this double; else the smallest candidate is vm + 1. vr_exact: the digits dropped from vr
       before the last one (`last`) are all zero. */
    int vm_in = bounds_in && vm_exact;
    int removed = 0;
    unsigned last = 0;
    /* a digit is dropped while a shorter number lies in (vm, vp], then while vm itself is one and
       an output (the lower bound, vm > 0: this ends; vp / 10 == vm / 10 from then on) */
    while (vp / 10 > vm / 10 || (vm_in && vm % 10 == 0)) {
        vm_in &= vm % 10 == 0;
        vr_exact &= last == 0;
        last = (unsigned)(vr % 10);
        vr /= 10;
        vp /= 10;
        vm /= 10;
        removed++;
    }
    if (vr_exact && last == 5 && vr % 2 == 0) {
        last = 4; /* exactly halfway between two candidates: the even one */
    }
    *exponent10 = e10 + removed;
    return vr + ((vr == vm && !vm_in) || last >= 5);
}

/* "00" to "99": the text of two digits at a time. */
static const char sd_digit_pairs[201] =
    "00010203040506070809" "10111213141516171819" "20212223242526272829" "30313233343536373839"
    "40414243444546474849" "50515253545556575859" "60616263646566676869" "70717273747576777879"
    "80818283848586878889" "90919293949596979899";

static const uint64_t sd_pow10[18] = {
    UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
    UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
    UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
    UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
    UINT64_C(10000000000000000), UINT64_C(100000000000000000)};

/* The number of decimal digits of 0 < v < 10^17: floor(bits(v) * log10(2)) is that or one less. */
static inline int sd_digit_count(uint64_t v) {
    int guess = (64 - __builtin_clzll(v)) * 1233 >> 12;
    return guess + (v >= sd_pow10[guess]);
}

/* The `count` decimal digits of v < 10^count (with leading zeros), ending just before `end`. */
static inline void sd_put_digits(char* end, uint64_t v, int count) {
    for (; count >= 2; count -= 2) {
        end -= 2;
        memcpy(end, sd_digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (count) {
        end[-1] = (char)('0' + v);
    }
}

/* repr(x) of a finite double into text (SD_REPR_SIZE bytes of room); returns its length.
   With point = the number of digits + the decimal exponent (where the decimal point goes):
   "d.ddde+XX" when point <= -4 or point > 16, else "0.000ddd", "ddd00.0" or "dd.dd". */
static inline int sd_repr(double x, char* text) {
    uint64_t bits, d, scale, whole;
    int n, point, e10, exponent;
    char* w = text;
    memcpy(&bits, &x, sizeof bits);
    if (bits >> 63) {
        *w++ = '-';
    }
    bits &= ~(UINT64_C(1) << 63);
    if (bits == 0) {
        memcpy(w, "0.0", 3);
        return (int)(w - text) + 3;
    }
    d = sd_shortest(bits, &e10);
    n = sd_digit_count(d);
    point = n + e10;
    if (point <= -4 || point > 16) {
        sd_put_digits(w + 1 + n, d, n); /* one place right: the first digit moves before the '.' */
        w[0] = w[1];
        w[1] = '.';
        w += n > 1 ? n + 1 : 1;
        exponent = point - 1;
        *w++ = 'e';
        *w++ = exponent < 0 ? '-' : '+';
        if (exponent < 0) {
            exponent = -exponent;
        }
        if (exponent >= 100) {
            *w++ = (char)('0' + exponent / 100);
            exponent %= 100;
        }
        sd_put_digits(w + 2, (uint64_t)exponent, 2);
        w += 2;
    } else if (point <= 0) {
        memcpy(w, "0.000", 5);
        w += 2 - point;
        sd_put_digits(w + n, d, n);
        w += n;
    } else if (point >= n) {
        memset(w, '0', 16); /* the zeros after the digits, up to the point (at most 16) */
        sd_put_digits(w + n, d, n);
        w += point;
        memcpy(w, ".0", 2);
        w += 2;
    } else {
        scale = sd_pow10[n - point];
        whole = d / scale;
        sd_put_digits(w + point, whole, point);
        w[point] = '.';
        sd_put_digits(w + n + 1, d - whole * scale, n - point);
        w += n + 1;
    }
    return (int)(w - text);
}

#endif
