extern "C" __global__ void __launch_bounds__(256)
    ln_masked_370e4a8(const tsr::bf16_t* __restrict__ v_in0, const tsr::bf16_t* __restrict__ v_in1,
                      const tsr::bf16_t* __restrict__ v_in2, tsr::bf16_t* __restrict__ v_out) {
  {
    const long long v_t0 = (long long)blockIdx.x;
    const long long v_t1 = 32767;
    const long long v_t2 = 512;
    const long long v_t3 = v_t0 + v_t2;
    const long long v_t4 = tsr::imin(v_t3, v_t1);
    const long long v_t5 = 4096;
    const long long v_t6 = 4096;
    const long long v_t7 = v_t4 * v_t6;
    tsr::prefetch(v_in0 + v_t7, v_t5);
    const long long v_t8 = 4096;
    const long long v_t9 = 0;
    const long long v_t10 = 1;
    const long long v_t11 = v_t9 * v_t10;
    const long long v_t12 = 4096;
    const long long v_t13 = v_t0 * v_t12;
    const long long v_t14 = v_t13 + v_t11;
    const tsr::tile<float, 4096> v_t15 = tsr::load_masked<float, 4096>(v_in0 + v_t14, v_t8, 0.0f);
    const float v_t16 = tsr::reduce_lanes_sum(v_t15);
    const float v_t17 = 4096.0f;
    const float v_t18 = tsr::fn_div(v_t16, v_t17);
    const tsr::tile<float, 4096> v_t19 = tsr::full<float, 4096>(v_t18);
    const long long v_t20 = 4096;
    const long long v_t21 = 0;
    const tsr::tile<float, 4096> v_t22 = tsr::fn_sub(v_t15, v_t19);
    const tsr::tile<float, 4096> v_t23 = tsr::fn_mul(v_t22, v_t22);
    const float v_t24 = tsr::reduce_lanes_sum(v_t23);
    const float v_t25 = 4096.0f;
    const float v_t26 = tsr::fn_div(v_t24, v_t25);
    const float v_t27 = 1e-05f;
    const float v_t28 = tsr::fn_add(v_t26, v_t27);
    const float v_t29 = tsr::fn_rsqrt(v_t28);
    const tsr::tile<float, 4096> v_t30 = tsr::full<float, 4096>(v_t29);
    const long long v_t31 = 4096;
    const long long v_t32 = v_t0 * v_t31;
    const long long v_t33 = 0;
    const long long v_t34 = 1;
    const long long v_t35 = v_t33 * v_t34;
    const long long v_t36 = 0;
    const long long v_t37 = v_t0 * v_t36;
    const long long v_t38 = v_t37 + v_t35;
    const tsr::tile<float, 4096> v_t39 = tsr::load_masked<float, 4096>(v_in1 + v_t38, v_t31, 0.0f);
    const tsr::tile<float, 4096> v_t40 = tsr::fn_sub(v_t15, v_t19);
    const tsr::tile<float, 4096> v_t41 = tsr::fn_mul(v_t40, v_t30);
    const tsr::tile<float, 4096> v_t42 = tsr::fn_mul(v_t41, v_t39);
    const long long v_t43 = 1;
    const long long v_t44 = v_t33 * v_t43;
    const long long v_t45 = 0;
    const long long v_t46 = v_t0 * v_t45;
    const long long v_t47 = v_t46 + v_t44;
    const tsr::tile<float, 4096> v_t48 = tsr::load_masked<float, 4096>(v_in2 + v_t47, v_t31, 0.0f);
    const tsr::tile<float, 4096> v_t49 = tsr::fn_add(v_t42, v_t48);
    tsr::store(v_out + v_t32, v_t49);
  }
}
