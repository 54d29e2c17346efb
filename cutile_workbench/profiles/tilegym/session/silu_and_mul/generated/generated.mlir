cuda_tile.module @silu_and_mul_module {
  entry @silu_and_mul_kernel_entry(%0: tile<ptr<f16>>, %1: tile<ptr<f16>>, %2: tile<i32>, %3: tile<i32>, %4: tile<i32>) {
    %5 = constant <i32: 8192> : tile<i32>
    %6 = assume div_by<16>, %0 : tile<ptr<f16>>
    %7 = assume div_by<16>, %1 : tile<ptr<f16>>
    %8 = assume div_by<16>, %2 : tile<i32>
    %9 = assume div_by<16>, %3 : tile<i32>
    %10 = assume div_by<16>, %4 : tile<i32>
    %11 = constant <i32: 8192> : tile<i32>
    %12 = assume div_by<16>, %6 : tile<ptr<f16>>
    %13 = assume div_by<16>, %7 : tile<ptr<f16>>
    %14, %15, %16 = get_tile_block_id : tile<i32>
    %17 = assume bounded<0, ?>, %14 : tile<i32>
    %18 = assume bounded<0, ?>, %15 : tile<i32>
    %19 = assume bounded<0, ?>, %16 : tile<i32>
    %20 = exti %17 signed : tile<i32> -> tile<i64>
    %21 = exti %9 signed : tile<i32> -> tile<i64>
    %22 = exti %10 signed : tile<i32> -> tile<i64>
    %23 = muli %20, %21 : tile<i64>
    %24 = muli %20, %22 : tile<i64>
    %25 = offset %13, %23 : tile<ptr<f16>>, tile<i64> -> tile<ptr<f16>>
    %26 = offset %12, %24 : tile<ptr<f16>>, tile<i64> -> tile<ptr<f16>>
    %27 = iota : tile<8192xi32>
    %28 = constant <i32: 8192> : tile<i32>
    %29 = constant <i32: 1> : tile<i32>
    %30 = constant <i32: 1> : tile<i32>
    %31 = reshape %8 : tile<i32> -> tile<1xi32>
    %32 = constant <i32: 1> : tile<i32>
    %33 = constant <i32: 8192> : tile<i32>
    %34 = broadcast %31 : tile<1xi32> -> tile<8192xi32>
    %35 = cmpi less_than %27, %34, signed : tile<8192xi32> -> tile<8192xi1>
    %36 = constant <i32: 1> : tile<i32>
    %37 = reshape %25 : tile<ptr<f16>> -> tile<1xptr<f16>>
    %38 = constant <i32: 1> : tile<i32>
    %39 = constant <i32: 8192> : tile<i32>
    %40 = broadcast %37 : tile<1xptr<f16>> -> tile<8192xptr<f16>>
    %41 = constant <i32: 8192> : tile<i32>
    %42 = offset %40, %27 : tile<8192xptr<f16>>, tile<8192xi32> -> tile<8192xptr<f16>>
    %43, %44 = load_ptr_tko weak %42, %35 optimization_hints = #cuda_tile.optimization_hints<sm_90 = {latency = 3}> : tile<8192xptr<f16>>, tile<8192xi1> -> tile<8192xf16>, token
    %45 = offset %25, %8 : tile<ptr<f16>>, tile<i32> -> tile<ptr<f16>>
    %46 = constant <i32: 1> : tile<i32>
    %47 = reshape %45 : tile<ptr<f16>> -> tile<1xptr<f16>>
    %48 = constant <i32: 1> : tile<i32>
    %49 = constant <i32: 8192> : tile<i32>
    %50 = broadcast %47 : tile<1xptr<f16>> -> tile<8192xptr<f16>>
    %51 = constant <i32: 8192> : tile<i32>
    %52 = offset %50, %27 : tile<8192xptr<f16>>, tile<8192xi32> -> tile<8192xptr<f16>>
    %53, %54 = load_ptr_tko weak %52, %35 optimization_hints = #cuda_tile.optimization_hints<sm_90 = {latency = 3}> : tile<8192xptr<f16>>, tile<8192xi1> -> tile<8192xf16>, token
    %55 = ftof %43 : tile<8192xf16> -> tile<8192xf32>
    %56 = ftof %53 : tile<8192xf16> -> tile<8192xf32>
    %57 = constant <f32: 1.4426950216293335> : tile<8192xf32>
    %58 = mulf %55, %57 flush_to_zero : tile<8192xf32>
    %59 = exp2 %58 flush_to_zero : tile<8192xf32>
    %60 = constant <f32: 1.0> : tile<8192xf32>
    %61 = addf %59, %60 flush_to_zero : tile<8192xf32>
    %62 = divf %59, %61 rounding<approx> flush_to_zero : tile<8192xf32>
    %63 = mulf %55, %62 flush_to_zero : tile<8192xf32>
    %64 = mulf %63, %56 flush_to_zero : tile<8192xf32>
    %65 = ftof %64 : tile<8192xf32> -> tile<8192xf16>
    %66 = constant <i32: 1> : tile<i32>
    %67 = reshape %26 : tile<ptr<f16>> -> tile<1xptr<f16>>
    %68 = constant <i32: 1> : tile<i32>
    %69 = constant <i32: 8192> : tile<i32>
    %70 = broadcast %67 : tile<1xptr<f16>> -> tile<8192xptr<f16>>
    %71 = constant <i32: 8192> : tile<i32>
    %72 = offset %70, %27 : tile<8192xptr<f16>>, tile<8192xi32> -> tile<8192xptr<f16>>
    %73 = store_ptr_tko weak %72, %65, %35 optimization_hints = #cuda_tile.optimization_hints<sm_90 = {latency = 3}> : tile<8192xptr<f16>>, tile<8192xf16>, tile<8192xi1> -> token
    return
  }
}
